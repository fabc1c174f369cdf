"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}]>}], function_type = (tensor<8x5xf32>, tensor<5xf32>) -> (tensor<7x5xf32>, tensor<5xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<8x5xf32>, %arg1: tensor<5xf32>):
    %0 = "stablehlo.slice"(%arg0) <{limit_indices = array<i64: 7, 5>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<8x5xf32>) -> tensor<7x5xf32>
    %1 = "stablehlo.exponential"(%0) : (tensor<7x5xf32>) -> tensor<7x5xf32>
    %2 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %3 = "stablehlo.broadcast_in_dim"(%2) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<7x5xf32>
    %4 = "stablehlo.multiply"(%1, %3) : (tensor<7x5xf32>, tensor<7x5xf32>) -> tensor<7x5xf32>
    %5 = "stablehlo.broadcast_in_dim"(%arg1) <{broadcast_dimensions = array<i64: 1>}> : (tensor<5xf32>) -> tensor<1x5xf32>
    %6 = "stablehlo.broadcast_in_dim"(%5) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<1x5xf32>) -> tensor<7x5xf32>
    %7 = "stablehlo.add"(%4, %6) : (tensor<7x5xf32>, tensor<7x5xf32>) -> tensor<7x5xf32>
    %8 = "sdy.sharding_constraint"(%7) <{sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}> : (tensor<7x5xf32>) -> tensor<7x5xf32>
    %9 = "stablehlo.multiply"(%8, %8) : (tensor<7x5xf32>, tensor<7x5xf32>) -> tensor<7x5xf32>
    %10 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %11 = "stablehlo.reduce"(%9, %10) <{dimensions = array<i64: 0>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %12 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%12) : (tensor<f32>) -> ()
    }) : (tensor<7x5xf32>, tensor<f32>) -> tensor<5xf32>
    "func.return"(%8, %11) : (tensor<7x5xf32>, tensor<5xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
