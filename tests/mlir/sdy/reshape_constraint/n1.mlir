module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}, {name = "y", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<8x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<96xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<4xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = stablehlo.reshape %arg0 : (tensor<8x12xf32>) -> tensor<4x24xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x24xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<4x24xf32>
    %3 = sdy.sharding_constraint %2 <@mesh, [{"x"}, {}]> : tensor<4x24xf32>
    %4 = stablehlo.reshape %3 : (tensor<4x24xf32>) -> tensor<96xf32>
    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}]> : tensor<96xf32>
    %6 = stablehlo.sine %5 : tensor<96xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<4x24xf32>, tensor<f32>) -> tensor<4xf32>
    return %6, %7 : tensor<96xf32>, tensor<4xf32>
  }
}
