"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}], function_type = (tensor<6x6x4xf32>, tensor<6x3xi32>, tensor<6x3x4xf32>, tensor<3x4xi32>) -> (tensor<6x3x4xf32>, tensor<6x6x4xf32>, tensor<6x6x4xf32>, tensor<3x6x4xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}, {}]>}, {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"y"}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<6x6x4xf32>, %arg1: tensor<6x3xi32>, %arg2: tensor<6x3x4xf32>, %arg3: tensor<3x4xi32>):
    %0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %1 = "stablehlo.broadcast_in_dim"(%0) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<6x3xi32>
    %2 = "stablehlo.compare"(%arg1, %1) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi1>
    %3 = "stablehlo.constant"() <{value = dense<6> : tensor<i32>}> : () -> tensor<i32>
    %4 = "stablehlo.broadcast_in_dim"(%3) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<6x3xi32>
    %5 = "stablehlo.add"(%arg1, %4) : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi32>
    %6 = "stablehlo.select"(%2, %5, %arg1) : (tensor<6x3xi1>, tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi32>
    %7 = "stablehlo.broadcast_in_dim"(%6) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<6x3xi32>) -> tensor<6x3x1xi32>
    %8 = "stablehlo.gather"(%arg0, %7) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 4>}> : (tensor<6x6x4xf32>, tensor<6x3x1xi32>) -> tensor<6x3x4xf32>
    %9 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %10 = "stablehlo.broadcast_in_dim"(%9) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<6x3xi32>
    %11 = "stablehlo.compare"(%arg1, %10) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi1>
    %12 = "stablehlo.constant"() <{value = dense<6> : tensor<i32>}> : () -> tensor<i32>
    %13 = "stablehlo.broadcast_in_dim"(%12) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<6x3xi32>
    %14 = "stablehlo.add"(%arg1, %13) : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi32>
    %15 = "stablehlo.select"(%11, %14, %arg1) : (tensor<6x3xi1>, tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi32>
    %16 = "stablehlo.broadcast_in_dim"(%15) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<6x3xi32>) -> tensor<6x3x1xi32>
    %17 = "stablehlo.scatter"(%arg0, %16, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
      %42 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%42) : (tensor<f32>) -> ()
    }) : (tensor<6x6x4xf32>, tensor<6x3x1xi32>, tensor<6x3x4xf32>) -> tensor<6x6x4xf32>
    %18 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %19 = "stablehlo.broadcast_in_dim"(%18) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<6x3x4xf32>
    %20 = "stablehlo.multiply"(%arg2, %19) : (tensor<6x3x4xf32>, tensor<6x3x4xf32>) -> tensor<6x3x4xf32>
    %21 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %22 = "stablehlo.broadcast_in_dim"(%21) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<6x3xi32>
    %23 = "stablehlo.compare"(%arg1, %22) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi1>
    %24 = "stablehlo.constant"() <{value = dense<6> : tensor<i32>}> : () -> tensor<i32>
    %25 = "stablehlo.broadcast_in_dim"(%24) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<6x3xi32>
    %26 = "stablehlo.add"(%arg1, %25) : (tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi32>
    %27 = "stablehlo.select"(%23, %26, %arg1) : (tensor<6x3xi1>, tensor<6x3xi32>, tensor<6x3xi32>) -> tensor<6x3xi32>
    %28 = "stablehlo.broadcast_in_dim"(%27) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<6x3xi32>) -> tensor<6x3x1xi32>
    %29 = "stablehlo.scatter"(%arg0, %28, %20) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      "stablehlo.return"(%arg5) : (tensor<f32>) -> ()
    }) : (tensor<6x6x4xf32>, tensor<6x3x1xi32>, tensor<6x3x4xf32>) -> tensor<6x6x4xf32>
    %30 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %31 = "stablehlo.broadcast_in_dim"(%30) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<3x4xi32>
    %32 = "stablehlo.compare"(%arg3, %31) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi1>
    %33 = "stablehlo.constant"() <{value = dense<6> : tensor<i32>}> : () -> tensor<i32>
    %34 = "stablehlo.broadcast_in_dim"(%33) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<3x4xi32>
    %35 = "stablehlo.add"(%arg3, %34) : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi32>
    %36 = "stablehlo.select"(%32, %35, %arg3) : (tensor<3x4xi1>, tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi32>
    %37 = "stablehlo.transpose"(%36) <{permutation = array<i64: 1, 0>}> : (tensor<3x4xi32>) -> tensor<4x3xi32>
    %38 = "stablehlo.broadcast_in_dim"(%37) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<4x3xi32>) -> tensor<4x3x1xi32>
    %39 = "stablehlo.transpose"(%arg0) <{permutation = array<i64: 2, 0, 1>}> : (tensor<6x6x4xf32>) -> tensor<4x6x6xf32>
    %40 = "stablehlo.gather"(%39, %38) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 6>}> : (tensor<4x6x6xf32>, tensor<4x3x1xi32>) -> tensor<4x3x6xf32>
    %41 = "stablehlo.transpose"(%40) <{permutation = array<i64: 1, 2, 0>}> : (tensor<4x3x6xf32>) -> tensor<3x6x4xf32>
    "func.return"(%8, %17, %29, %41) : (tensor<6x3x4xf32>, tensor<6x6x4xf32>, tensor<6x6x4xf32>, tensor<3x6x4xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
