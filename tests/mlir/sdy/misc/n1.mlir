module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}, %arg2: tensor<4x8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<3x2xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<8x4xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<11x5xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<8x4xf32> {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<4x8xi32> {jax.result_info = "result[4]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<4x8xi32> {jax.result_info = "result[5]", sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, tensor<4x4xf32> {jax.result_info = "result[6]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare LT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<8> : tensor<i32>
    %1 = stablehlo.add %arg1, %c_0 : tensor<i32>
    %2 = stablehlo.select %0, %1, %arg1 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %3 = stablehlo.dynamic_slice %arg0, %2, %c_1, sizes = [3, 2] : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<3x2xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.compare LT, %arg1, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_3 = stablehlo.constant dense<8> : tensor<i32>
    %6 = stablehlo.add %arg1, %c_3 : tensor<i32>
    %7 = stablehlo.select %5, %6, %arg1 : tensor<i1>, tensor<i32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %8 = stablehlo.compare LT, %arg1, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_5 = stablehlo.constant dense<4> : tensor<i32>
    %9 = stablehlo.add %arg1, %c_5 : tensor<i32>
    %10 = stablehlo.select %8, %9, %arg1 : tensor<i1>, tensor<i32>
    %11 = stablehlo.dynamic_update_slice %arg0, %4, %7, %10 : (tensor<8x4xf32>, tensor<2x2xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>
    %12 = call @_flip(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %cst_6 = stablehlo.constant dense<-1.500000e+00> : tensor<f32>
    %13 = call @_pad(%12, %cst_6) : (tensor<8x4xf32>, tensor<f32>) -> tensor<11x5xf32>
    %14 = stablehlo.abs %arg0 : tensor<8x4xf32>
    %15 = stablehlo.sqrt %14 : tensor<8x4xf32>
    %16 = stablehlo.multiply %arg0, %arg0 : tensor<8x4xf32>
    %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %18 = stablehlo.add %17, %16 : tensor<8x4xf32>
    %19 = stablehlo.rsqrt %18 : tensor<8x4xf32>
    %20 = stablehlo.add %15, %19 : tensor<8x4xf32>
    %21 = stablehlo.abs %arg0 : tensor<8x4xf32>
    %22 = stablehlo.log_plus_one %21 : tensor<8x4xf32>
    %23 = stablehlo.add %20, %22 : tensor<8x4xf32>
    %24 = stablehlo.optimization_barrier %23 : tensor<8x4xf32>
    %c_8 = stablehlo.constant dense<2> : tensor<i32>
    %25 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %26 = stablehlo.shift_left %arg2, %25 : tensor<4x8xi32>
    %c_9 = stablehlo.constant dense<1> : tensor<i32>
    %27 = stablehlo.broadcast_in_dim %c_9, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %28 = stablehlo.shift_right_arithmetic %arg2, %27 : tensor<4x8xi32>
    %29 = stablehlo.xor %26, %28 : tensor<4x8xi32>
    %c_10 = stablehlo.constant dense<3> : tensor<i32>
    %30 = stablehlo.broadcast_in_dim %c_10, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %31 = stablehlo.shift_right_arithmetic %arg2, %30 : tensor<4x8xi32>
    %32 = stablehlo.or %29, %31 : tensor<4x8xi32>
    %33 = stablehlo.sign %arg2 : tensor<4x8xi32>
    %34 = stablehlo.abs %arg2 : tensor<4x8xi32>
    %35 = stablehlo.multiply %33, %34 : tensor<4x8xi32>
    %c_11 = stablehlo.constant dense<7> : tensor<i32>
    %36 = call @remainder(%35, %c_11) : (tensor<4x8xi32>, tensor<i32>) -> tensor<4x8xi32>
    %37 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %38 = stablehlo.dot_general %37, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    return %3, %11, %13, %24, %32, %36, %38 : tensor<3x2xf32>, tensor<8x4xf32>, tensor<11x5xf32>, tensor<8x4xf32>, tensor<4x8xi32>, tensor<4x8xi32>, tensor<4x4xf32>
  }
  func.func private @_flip(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
  func.func private @_pad(%arg0: tensor<8x4xf32>, %arg1: tensor<f32>) -> tensor<11x5xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [2, 1], interior = [0, 0] : (tensor<8x4xf32>, tensor<f32>) -> tensor<11x5xf32>
    return %1 : tensor<11x5xf32>
  }
  func.func private @remainder(%arg0: tensor<4x8xi32>, %arg1: tensor<i32>) -> tensor<4x8xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<4x8xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<4x8xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
    %12 = stablehlo.and %11, %6 : tensor<4x8xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<4x8xi32>
    %14 = stablehlo.add %4, %13 : tensor<4x8xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<4x8xi1>, tensor<4x8xi32>
    return %15 : tensor<4x8xi32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
}
