"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}], function_type = (tensor<8x12xf32>) -> (tensor<96xf32>, tensor<4xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<8x12xf32>):
    %0 = "stablehlo.reshape"(%arg0) : (tensor<8x12xf32>) -> tensor<4x24xf32>
    %1 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4x24xf32>
    %3 = "stablehlo.multiply"(%0, %2) : (tensor<4x24xf32>, tensor<4x24xf32>) -> tensor<4x24xf32>
    %4 = "sdy.sharding_constraint"(%3) <{sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}> : (tensor<4x24xf32>) -> tensor<4x24xf32>
    %5 = "stablehlo.reshape"(%4) : (tensor<4x24xf32>) -> tensor<96xf32>
    %6 = "sdy.sharding_constraint"(%5) <{sharding = #sdy.sharding<@mesh, [{"x"}]>}> : (tensor<96xf32>) -> tensor<96xf32>
    %7 = "stablehlo.sine"(%6) : (tensor<96xf32>) -> tensor<96xf32>
    %8 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %9 = "stablehlo.reduce"(%4, %8) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %10 = "stablehlo.add"(%arg1, %arg2) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%10) : (tensor<f32>) -> ()
    }) : (tensor<4x24xf32>, tensor<f32>) -> tensor<4xf32>
    "func.return"(%7, %9) : (tensor<96xf32>, tensor<4xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
