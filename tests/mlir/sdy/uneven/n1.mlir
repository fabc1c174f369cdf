module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<8x5xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<5xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) -> (tensor<7x5xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<5xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = stablehlo.slice %arg0 [0:7, 0:5] : (tensor<8x5xf32>) -> tensor<7x5xf32>
    %1 = stablehlo.exponential %0 : tensor<7x5xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<7x5xf32>
    %3 = stablehlo.multiply %1, %2 : tensor<7x5xf32>
    %4 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<5xf32>) -> tensor<1x5xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<7x5xf32>
    %6 = stablehlo.add %3, %5 : tensor<7x5xf32>
    %7 = sdy.sharding_constraint %6 <@mesh, [{"x"}, {}]> : tensor<7x5xf32>
    %8 = stablehlo.multiply %7, %7 : tensor<7x5xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%8 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<7x5xf32>, tensor<f32>) -> tensor<5xf32>
    return %7, %9 : tensor<7x5xf32>, tensor<5xf32>
  }
}
