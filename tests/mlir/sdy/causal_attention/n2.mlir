module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<12x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<12x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<12x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<12x4xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<12x4xf32>) -> tensor<4x12xf32>
    %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<12x4xf32>, tensor<4x12xf32>) -> tensor<12x12xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<12x12xf32>
    %3 = stablehlo.divide %1, %2 : tensor<12x12xf32>
    %4 = stablehlo.iota dim = 0 : tensor<12xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<12xi32>) -> tensor<12x1xi32>
    %6 = stablehlo.iota dim = 0 : tensor<12xi32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [1] : (tensor<12xi32>) -> tensor<1x12xi32>
    %8 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<12x1xi32>) -> tensor<12x12xi32>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x12xi32>) -> tensor<12x12xi32>
    %10 = stablehlo.compare GE, %8, %9, SIGNED : (tensor<12x12xi32>, tensor<12x12xi32>) -> tensor<12x12xi1>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %11 = call @_where(%10, %3, %cst_0) : (tensor<12x12xi1>, tensor<12x12xf32>, tensor<f32>) -> tensor<12x12xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %12 = stablehlo.reduce(%11 init: %cst_1) applies stablehlo.maximum across dimensions = [1] : (tensor<12x12xf32>, tensor<f32>) -> tensor<12xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<12xf32>
    %14 = stablehlo.maximum %13, %12 : tensor<12xf32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [0] : (tensor<12xf32>) -> tensor<12x1xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1] : (tensor<12x1xf32>) -> tensor<12x12xf32>
    %17 = stablehlo.subtract %11, %16 : tensor<12x12xf32>
    %18 = stablehlo.exponential %17 : tensor<12x12xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %19 = stablehlo.reduce(%18 init: %cst_3) applies stablehlo.add across dimensions = [1] : (tensor<12x12xf32>, tensor<f32>) -> tensor<12xf32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<12xf32>) -> tensor<12x1xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1] : (tensor<12x1xf32>) -> tensor<12x12xf32>
    %22 = stablehlo.divide %18, %21 : tensor<12x12xf32>
    %23 = stablehlo.dot_general %22, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<12x12xf32>, tensor<12x4xf32>) -> tensor<12x4xf32>
    return %23 : tensor<12x4xf32>
  }
  func.func private @_where(%arg0: tensor<12x12xi1>, %arg1: tensor<12x12xf32>, %arg2: tensor<f32>) -> tensor<12x12xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<12x12xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<12x12xi1>, tensor<12x12xf32>
    return %2 : tensor<12x12xf32>
  }
}
