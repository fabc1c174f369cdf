module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}, {name = "y", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<8x8xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
    %0 = call @_roll_static(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = call @_roll_static_0(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %2 = stablehlo.add %0, %1 : tensor<8x8xf32>
    %3 = call @_roll_static_1(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %4 = stablehlo.add %2, %3 : tensor<8x8xf32>
    %5 = call @_roll_static_2(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %6 = stablehlo.add %4, %5 : tensor<8x8xf32>
    %cst = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %8 = stablehlo.multiply %7, %arg0 : tensor<8x8xf32>
    %9 = stablehlo.subtract %6, %8 : tensor<8x8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %11 = stablehlo.multiply %10, %9 : tensor<8x8xf32>
    %12 = stablehlo.add %arg0, %11 : tensor<8x8xf32>
    return %12 : tensor<8x8xf32>
  }
  func.func private @_roll_static(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.slice %arg0 [7:8, 0:8] : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %1 = stablehlo.slice %arg0 [0:7, 0:8] : (tensor<8x8xf32>) -> tensor<7x8xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<1x8xf32>, tensor<7x8xf32>) -> tensor<8x8xf32>
    return %2 : tensor<8x8xf32>
  }
  func.func private @_roll_static_0(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.slice %arg0 [1:8, 0:8] : (tensor<8x8xf32>) -> tensor<7x8xf32>
    %1 = stablehlo.slice %arg0 [0:1, 0:8] : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<7x8xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
    return %2 : tensor<8x8xf32>
  }
  func.func private @_roll_static_1(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.slice %arg0 [0:8, 7:8] : (tensor<8x8xf32>) -> tensor<8x1xf32>
    %1 = stablehlo.slice %arg0 [0:8, 0:7] : (tensor<8x8xf32>) -> tensor<8x7xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 1 : (tensor<8x1xf32>, tensor<8x7xf32>) -> tensor<8x8xf32>
    return %2 : tensor<8x8xf32>
  }
  func.func private @_roll_static_2(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.slice %arg0 [0:8, 1:8] : (tensor<8x8xf32>) -> tensor<8x7xf32>
    %1 = stablehlo.slice %arg0 [0:8, 0:1] : (tensor<8x8xf32>) -> tensor<8x1xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 1 : (tensor<8x7xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
    return %2 : tensor<8x8xf32>
  }
}
