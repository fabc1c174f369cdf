module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<8x6xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x6xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x6xi32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<8x6xi32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) {
    %0 = stablehlo.compare GT, %arg0, %arg1, SIGNED : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %c = stablehlo.constant dense<3> : tensor<i32>
    %1 = call @remainder(%arg0, %c) : (tensor<8x6xi32>, tensor<i32>) -> tensor<8x6xi32>
    %c_0 = stablehlo.constant dense<4> : tensor<i32>
    %2 = call @floor_divide(%arg1, %c_0) : (tensor<8x6xi32>, tensor<i32>) -> tensor<8x6xi32>
    %3 = call @_where_0(%0, %1, %2) : (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %c_1 = stablehlo.constant dense<-5> : tensor<i32>
    %c_2 = stablehlo.constant dense<5> : tensor<i32>
    %4 = call @clip(%arg0, %c_1, %c_2) : (tensor<8x6xi32>, tensor<i32>, tensor<i32>) -> tensor<8x6xi32>
    %5 = stablehlo.add %3, %4 : tensor<8x6xi32>
    %6 = stablehlo.multiply %arg0, %arg1 : tensor<8x6xi32>
    %7 = stablehlo.abs %arg1 : tensor<8x6xi32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %8 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %9 = stablehlo.maximum %7, %8 : tensor<8x6xi32>
    %10 = call @floor_divide_1(%6, %9) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    return %5, %10 : tensor<8x6xi32>, tensor<8x6xi32>
  }
  func.func private @remainder(%arg0: tensor<8x6xi32>, %arg1: tensor<i32>) -> tensor<8x6xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<8x6xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<8x6xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<8x6xi1>, tensor<8x6xi1>) -> tensor<8x6xi1>
    %12 = stablehlo.and %11, %6 : tensor<8x6xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %14 = stablehlo.add %4, %13 : tensor<8x6xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<8x6xi1>, tensor<8x6xi32>
    return %15 : tensor<8x6xi32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @floor_divide(%arg0: tensor<8x6xi32>, %arg1: tensor<i32>) -> tensor<8x6xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %2 = stablehlo.divide %arg0, %1 : tensor<8x6xi32>
    %3 = stablehlo.sign %arg0 : tensor<8x6xi32>
    %4 = stablehlo.sign %0 : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %6 = stablehlo.compare NE, %3, %5, SIGNED : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %7 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %8 = stablehlo.remainder %arg0, %7 : tensor<8x6xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %10 = stablehlo.compare NE, %8, %9, SIGNED : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %11 = stablehlo.and %6, %10 : tensor<8x6xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %13 = stablehlo.subtract %2, %12 : tensor<8x6xi32>
    %14 = call @_where_0(%11, %13, %2) : (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    return %14 : tensor<8x6xi32>
  }
  func.func private @_where_0(%arg0: tensor<8x6xi1>, %arg1: tensor<8x6xi32>, %arg2: tensor<8x6xi32>) -> tensor<8x6xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<8x6xi1>, tensor<8x6xi32>
    return %0 : tensor<8x6xi32>
  }
  func.func private @clip(%arg0: tensor<8x6xi32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<8x6xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<8x6xi32>
    %3 = stablehlo.convert %arg2 : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %5 = stablehlo.minimum %4, %2 : tensor<8x6xi32>
    return %5 : tensor<8x6xi32>
  }
  func.func private @floor_divide_1(%arg0: tensor<8x6xi32>, %arg1: tensor<8x6xi32>) -> tensor<8x6xi32> {
    %0 = stablehlo.divide %arg0, %arg1 : tensor<8x6xi32>
    %1 = stablehlo.sign %arg0 : tensor<8x6xi32>
    %2 = stablehlo.sign %arg1 : tensor<8x6xi32>
    %3 = stablehlo.compare NE, %1, %2, SIGNED : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %4 = stablehlo.remainder %arg0, %arg1 : tensor<8x6xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %7 = stablehlo.and %3, %6 : tensor<8x6xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %8 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<8x6xi32>
    %9 = stablehlo.subtract %0, %8 : tensor<8x6xi32>
    %10 = call @_where_0(%7, %9, %0) : (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    return %10 : tensor<8x6xi32>
  }
}
