"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}], function_type = (tensor<8x8xf32>) -> tensor<8x8xf32>, res_attrs = [{jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg4: tensor<8x8xf32>):
    %12 = "func.call"(%arg4) <{callee = @_roll_static}> : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %13 = "func.call"(%arg4) <{callee = @_roll_static_0}> : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %14 = "stablehlo.add"(%12, %13) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %15 = "func.call"(%arg4) <{callee = @_roll_static_1}> : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %16 = "stablehlo.add"(%14, %15) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %17 = "func.call"(%arg4) <{callee = @_roll_static_2}> : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %18 = "stablehlo.add"(%16, %17) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %19 = "stablehlo.constant"() <{value = dense<4.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %20 = "stablehlo.broadcast_in_dim"(%19) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<8x8xf32>
    %21 = "stablehlo.multiply"(%20, %arg4) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %22 = "stablehlo.subtract"(%18, %21) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %23 = "stablehlo.constant"() <{value = dense<1.000000e-01> : tensor<f32>}> : () -> tensor<f32>
    %24 = "stablehlo.broadcast_in_dim"(%23) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<8x8xf32>
    %25 = "stablehlo.multiply"(%24, %22) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %26 = "stablehlo.add"(%arg4, %25) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    "func.return"(%26) : (tensor<8x8xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<8x8xf32>) -> tensor<8x8xf32>, res_attrs = [{}], sym_name = "_roll_static", sym_visibility = "private"}> ({
  ^bb0(%arg3: tensor<8x8xf32>):
    %9 = "stablehlo.slice"(%arg3) <{limit_indices = array<i64: 8, 8>, start_indices = array<i64: 7, 0>, strides = array<i64: 1, 1>}> : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %10 = "stablehlo.slice"(%arg3) <{limit_indices = array<i64: 7, 8>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<8x8xf32>) -> tensor<7x8xf32>
    %11 = "stablehlo.concatenate"(%9, %10) <{dimension = 0 : i64}> : (tensor<1x8xf32>, tensor<7x8xf32>) -> tensor<8x8xf32>
    "func.return"(%11) : (tensor<8x8xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<8x8xf32>) -> tensor<8x8xf32>, res_attrs = [{}], sym_name = "_roll_static_0", sym_visibility = "private"}> ({
  ^bb0(%arg2: tensor<8x8xf32>):
    %6 = "stablehlo.slice"(%arg2) <{limit_indices = array<i64: 8, 8>, start_indices = array<i64: 1, 0>, strides = array<i64: 1, 1>}> : (tensor<8x8xf32>) -> tensor<7x8xf32>
    %7 = "stablehlo.slice"(%arg2) <{limit_indices = array<i64: 1, 8>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %8 = "stablehlo.concatenate"(%6, %7) <{dimension = 0 : i64}> : (tensor<7x8xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
    "func.return"(%8) : (tensor<8x8xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<8x8xf32>) -> tensor<8x8xf32>, res_attrs = [{}], sym_name = "_roll_static_1", sym_visibility = "private"}> ({
  ^bb0(%arg1: tensor<8x8xf32>):
    %3 = "stablehlo.slice"(%arg1) <{limit_indices = array<i64: 8, 8>, start_indices = array<i64: 0, 7>, strides = array<i64: 1, 1>}> : (tensor<8x8xf32>) -> tensor<8x1xf32>
    %4 = "stablehlo.slice"(%arg1) <{limit_indices = array<i64: 8, 7>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<8x8xf32>) -> tensor<8x7xf32>
    %5 = "stablehlo.concatenate"(%3, %4) <{dimension = 1 : i64}> : (tensor<8x1xf32>, tensor<8x7xf32>) -> tensor<8x8xf32>
    "func.return"(%5) : (tensor<8x8xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<8x8xf32>) -> tensor<8x8xf32>, res_attrs = [{}], sym_name = "_roll_static_2", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<8x8xf32>):
    %0 = "stablehlo.slice"(%arg0) <{limit_indices = array<i64: 8, 8>, start_indices = array<i64: 0, 1>, strides = array<i64: 1, 1>}> : (tensor<8x8xf32>) -> tensor<8x7xf32>
    %1 = "stablehlo.slice"(%arg0) <{limit_indices = array<i64: 8, 1>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<8x8xf32>) -> tensor<8x1xf32>
    %2 = "stablehlo.concatenate"(%0, %1) <{dimension = 1 : i64}> : (tensor<8x7xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
    "func.return"(%2) : (tensor<8x8xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
