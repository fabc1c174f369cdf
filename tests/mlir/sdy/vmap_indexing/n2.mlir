module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<6x6x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, %arg1: tensor<6x3xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg2: tensor<6x3x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, %arg3: tensor<3x4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<6x3x4xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, tensor<6x6x4xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, tensor<6x6x4xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}, {}]>}, tensor<3x6x4xf32> {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"y"}]>}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6x3xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi1>
    %c_0 = stablehlo.constant dense<6> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<6x3xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<6x3xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<6x3xi1>, tensor<6x3xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<6x3xi32>) -> tensor<6x3x1xi32>
    %6 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 4>}> : (tensor<6x6x4xf32>, tensor<6x3x1xi32>) -> tensor<6x3x4xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<6x3xi32>
    %8 = stablehlo.compare LT, %arg1, %7, SIGNED : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi1>
    %c_2 = stablehlo.constant dense<6> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<6x3xi32>
    %10 = stablehlo.add %arg1, %9 : tensor<6x3xi32>
    %11 = stablehlo.select %8, %10, %arg1 : tensor<6x3xi1>, tensor<6x3xi32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1] : (tensor<6x3xi32>) -> tensor<6x3x1xi32>
    %13 = "stablehlo.scatter"(%arg0, %12, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %33 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %33 : tensor<f32>
    }) : (tensor<6x6x4xf32>, tensor<6x3x1xi32>, tensor<6x3x4xf32>) -> tensor<6x6x4xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x3x4xf32>
    %15 = stablehlo.multiply %arg2, %14 : tensor<6x3x4xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %16 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<6x3xi32>
    %17 = stablehlo.compare LT, %arg1, %16, SIGNED : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi1>
    %c_4 = stablehlo.constant dense<6> : tensor<i32>
    %18 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<6x3xi32>
    %19 = stablehlo.add %arg1, %18 : tensor<6x3xi32>
    %20 = stablehlo.select %17, %19, %arg1 : tensor<6x3xi1>, tensor<6x3xi32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1] : (tensor<6x3xi32>) -> tensor<6x3x1xi32>
    %22 = "stablehlo.scatter"(%arg0, %21, %15) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      stablehlo.return %arg5 : tensor<f32>
    }) : (tensor<6x6x4xf32>, tensor<6x3x1xi32>, tensor<6x3x4xf32>) -> tensor<6x6x4xf32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %23 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %24 = stablehlo.compare LT, %arg3, %23, SIGNED : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi1>
    %c_6 = stablehlo.constant dense<6> : tensor<i32>
    %25 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %26 = stablehlo.add %arg3, %25 : tensor<3x4xi32>
    %27 = stablehlo.select %24, %26, %arg3 : tensor<3x4xi1>, tensor<3x4xi32>
    %28 = stablehlo.transpose %27, dims = [1, 0] : (tensor<3x4xi32>) -> tensor<4x3xi32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [0, 1] : (tensor<4x3xi32>) -> tensor<4x3x1xi32>
    %30 = stablehlo.transpose %arg0, dims = [2, 0, 1] : (tensor<6x6x4xf32>) -> tensor<4x6x6xf32>
    %31 = "stablehlo.gather"(%30, %29) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 6>}> : (tensor<4x6x6xf32>, tensor<4x3x1xi32>) -> tensor<4x3x6xf32>
    %32 = stablehlo.transpose %31, dims = [1, 2, 0] : (tensor<4x3x6xf32>) -> tensor<3x6x4xf32>
    return %6, %13, %22, %32 : tensor<6x3x4xf32>, tensor<6x6x4xf32>, tensor<6x6x4xf32>, tensor<3x6x4xf32>
  }
}
