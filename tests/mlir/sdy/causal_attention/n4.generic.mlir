"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}], function_type = (tensor<12x4xf32>, tensor<12x4xf32>, tensor<12x4xf32>) -> tensor<12x4xf32>, res_attrs = [{jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg3: tensor<12x4xf32>, %arg4: tensor<12x4xf32>, %arg5: tensor<12x4xf32>):
    %3 = "stablehlo.transpose"(%arg4) <{permutation = array<i64: 1, 0>}> : (tensor<12x4xf32>) -> tensor<4x12xf32>
    %4 = "stablehlo.dot_general"(%arg3, %3) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<12x4xf32>, tensor<4x12xf32>) -> tensor<12x12xf32>
    %5 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %6 = "stablehlo.broadcast_in_dim"(%5) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<12x12xf32>
    %7 = "stablehlo.divide"(%4, %6) : (tensor<12x12xf32>, tensor<12x12xf32>) -> tensor<12x12xf32>
    %8 = "stablehlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<12xi32>
    %9 = "stablehlo.broadcast_in_dim"(%8) <{broadcast_dimensions = array<i64: 0>}> : (tensor<12xi32>) -> tensor<12x1xi32>
    %10 = "stablehlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<12xi32>
    %11 = "stablehlo.broadcast_in_dim"(%10) <{broadcast_dimensions = array<i64: 1>}> : (tensor<12xi32>) -> tensor<1x12xi32>
    %12 = "stablehlo.broadcast_in_dim"(%9) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<12x1xi32>) -> tensor<12x12xi32>
    %13 = "stablehlo.broadcast_in_dim"(%11) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<1x12xi32>) -> tensor<12x12xi32>
    %14 = "stablehlo.compare"(%12, %13) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction GE>}> : (tensor<12x12xi32>, tensor<12x12xi32>) -> tensor<12x12xi1>
    %15 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %16 = "func.call"(%14, %7, %15) <{callee = @_where}> : (tensor<12x12xi1>, tensor<12x12xf32>, tensor<f32>) -> tensor<12x12xf32>
    %17 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %18 = "stablehlo.reduce"(%16, %17) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg8: tensor<f32>, %arg9: tensor<f32>):
      %33 = "stablehlo.maximum"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%33) : (tensor<f32>) -> ()
    }) : (tensor<12x12xf32>, tensor<f32>) -> tensor<12xf32>
    %19 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %20 = "stablehlo.broadcast_in_dim"(%19) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<12xf32>
    %21 = "stablehlo.maximum"(%20, %18) : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
    %22 = "stablehlo.broadcast_in_dim"(%21) <{broadcast_dimensions = array<i64: 0>}> : (tensor<12xf32>) -> tensor<12x1xf32>
    %23 = "stablehlo.broadcast_in_dim"(%22) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<12x1xf32>) -> tensor<12x12xf32>
    %24 = "stablehlo.subtract"(%16, %23) : (tensor<12x12xf32>, tensor<12x12xf32>) -> tensor<12x12xf32>
    %25 = "stablehlo.exponential"(%24) : (tensor<12x12xf32>) -> tensor<12x12xf32>
    %26 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %27 = "stablehlo.reduce"(%25, %26) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
      %32 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%32) : (tensor<f32>) -> ()
    }) : (tensor<12x12xf32>, tensor<f32>) -> tensor<12xf32>
    %28 = "stablehlo.broadcast_in_dim"(%27) <{broadcast_dimensions = array<i64: 0>}> : (tensor<12xf32>) -> tensor<12x1xf32>
    %29 = "stablehlo.broadcast_in_dim"(%28) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<12x1xf32>) -> tensor<12x12xf32>
    %30 = "stablehlo.divide"(%25, %29) : (tensor<12x12xf32>, tensor<12x12xf32>) -> tensor<12x12xf32>
    %31 = "stablehlo.dot_general"(%30, %arg5) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<12x12xf32>, tensor<12x4xf32>) -> tensor<12x4xf32>
    "func.return"(%31) : (tensor<12x4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}, {}], function_type = (tensor<12x12xi1>, tensor<12x12xf32>, tensor<f32>) -> tensor<12x12xf32>, res_attrs = [{}], sym_name = "_where", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<12x12xi1>, %arg1: tensor<12x12xf32>, %arg2: tensor<f32>):
    %0 = "stablehlo.convert"(%arg2) : (tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.broadcast_in_dim"(%0) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<12x12xf32>
    %2 = "stablehlo.select"(%arg0, %arg1, %1) : (tensor<12x12xi1>, tensor<12x12xf32>, tensor<12x12xf32>) -> tensor<12x12xf32>
    "func.return"(%2) : (tensor<12x12xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
