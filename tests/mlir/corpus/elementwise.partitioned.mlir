// Generated from elementwise.mlir by mlir-opt 22 (tests/test_mlir_cli.py regenerates and compares):
//   mlir-opt --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" elementwise.mlir
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @grid(shape = ?)
  shard.grid @grid2(shape = 2)
  func.func @return_sharding(%arg0: tensor<?xf32>) -> (tensor<?xf32>, !shard.sharding) {
    %sharding = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    return %arg0, %sharding : tensor<?xf32>, !shard.sharding
  }
  func.func @full_replication(%arg0: tensor<6xi8>) -> tensor<6xi8> {
    return %arg0 : tensor<6xi8>
  }
  func.func @sharding_triplet(%arg0: tensor<?xf32>) -> tensor<8xf32> {
    %all_gather = shard.all_gather %arg0 on @grid grid_axes = [0] gather_axis = 0 : tensor<?xf32> -> tensor<?xf32>
    %cast = tensor.cast %all_gather : tensor<?xf32> to tensor<8xf32>
    return %cast : tensor<8xf32>
  }
  func.func @move_split_axis(%arg0: tensor<?x8xi8>) -> tensor<8x?xi8> {
    %all_to_all = shard.all_to_all %arg0 on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<?x8xi8> -> tensor<?x?xi8>
    %cast = tensor.cast %all_to_all : tensor<?x?xi8> to tensor<8x?xi8>
    return %cast : tensor<8x?xi8>
  }
  func.func @unary_elementwise(%arg0: tensor<?xf32>) -> tensor<?xf32> {
    %sharding = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %proc_linear_idx = shard.process_multi_index on @grid : index
    %shard_shape = shard.shard_shape dims = [8] sharding = %sharding device = [%proc_linear_idx] : index
    %0 = tensor.empty(%shard_shape) : tensor<?xf32>
    %1 = linalg.abs ins(%arg0 : tensor<?xf32>) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
    return %1 : tensor<?xf32>
  }
  func.func @unary_elementwise_with_resharding(%arg0: tensor<12xf64>) -> tensor<12xf64> {
    %all_slice = shard.all_slice %arg0 on @grid grid_axes = [0] slice_axis = 0 : tensor<12xf64> -> tensor<?xf64>
    %sharding = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %proc_linear_idx = shard.process_multi_index on @grid : index
    %shard_shape = shard.shard_shape dims = [12] sharding = %sharding device = [%proc_linear_idx] : index
    %0 = tensor.empty(%shard_shape) : tensor<?xf64>
    %1 = linalg.exp ins(%all_slice : tensor<?xf64>) outs(%0 : tensor<?xf64>) -> tensor<?xf64>
    %all_gather = shard.all_gather %1 on @grid grid_axes = [0] gather_axis = 0 : tensor<?xf64> -> tensor<?xf64>
    %cast = tensor.cast %all_gather : tensor<?xf64> to tensor<12xf64>
    return %cast : tensor<12xf64>
  }
  func.func @binary_elementwise(%arg0: tensor<?x6xf32>, %arg1: tensor<?x6xf32>) -> tensor<?x6xf32> {
    %sharding = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %proc_linear_idx = shard.process_multi_index on @grid : index
    %shard_shape:2 = shard.shard_shape dims = [8, 6] sharding = %sharding device = [%proc_linear_idx] : index, index
    %0 = tensor.empty(%shard_shape#0) : tensor<?x6xf32>
    %1 = linalg.add ins(%arg0, %arg1 : tensor<?x6xf32>, tensor<?x6xf32>) outs(%0 : tensor<?x6xf32>) -> tensor<?x6xf32>
    return %1 : tensor<?x6xf32>
  }
  func.func @multiple_chained_ops(%arg0: tensor<6xf64>) -> tensor<3xf64> {
    %all_slice = shard.all_slice %arg0 on @grid2 grid_axes = [0] slice_axis = 0 : tensor<6xf64> -> tensor<3xf64>
    %0 = tensor.empty() : tensor<3xf64>
    %1 = linalg.negf ins(%all_slice : tensor<3xf64>) outs(%0 : tensor<3xf64>) -> tensor<3xf64>
    %all_gather = shard.all_gather %1 on @grid2 grid_axes = [0] gather_axis = 0 : tensor<3xf64> -> tensor<6xf64>
    %cast = tensor.cast %all_gather : tensor<6xf64> to tensor<6xf64>
    %2 = tensor.empty() : tensor<6xf64>
    %3 = linalg.tanh ins(%cast : tensor<6xf64>) outs(%2 : tensor<6xf64>) -> tensor<6xf64>
    %all_slice_0 = shard.all_slice %3 on @grid2 grid_axes = [0] slice_axis = 0 : tensor<6xf64> -> tensor<3xf64>
    return %all_slice_0 : tensor<3xf64>
  }
  func.func @incomplete_sharding(%arg0: tensor<?x16xf32>) -> tensor<?x16xf32> {
    %sharding = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %proc_linear_idx = shard.process_multi_index on @grid : index
    %shard_shape:2 = shard.shard_shape dims = [8, 16] sharding = %sharding device = [%proc_linear_idx] : index, index
    %0 = tensor.empty(%shard_shape#0) : tensor<?x16xf32>
    %1 = linalg.sqrt ins(%arg0 : tensor<?x16xf32>) outs(%0 : tensor<?x16xf32>) -> tensor<?x16xf32>
    return %1 : tensor<?x16xf32>
  }
  func.func @generic_chain(%arg0: tensor<?x3xf64>, %arg1: tensor<?x3xf64>) -> tensor<9x?xf64> {
    %sharding = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %proc_linear_idx = shard.process_multi_index on @grid : index
    %shard_shape:2 = shard.shard_shape dims = [9, 3] sharding = %sharding device = [%proc_linear_idx] : index, index
    %0 = tensor.empty(%shard_shape#0) : tensor<?x3xf64>
    %cst = arith.constant 2.000000e+00 : f64
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<?x3xf64>, tensor<?x3xf64>) outs(%0 : tensor<?x3xf64>) {
    ^bb0(%in: f64, %in_3: f64, %out: f64):
      %4 = math.tanh %in : f64
      %5 = arith.mulf %4, %in_3 : f64
      %6 = arith.subf %5, %cst : f64
      %7 = arith.cmpf ogt, %6, %in : f64
      %8 = arith.select %7, %6, %in : f64
      linalg.yield %8 : f64
    } -> tensor<?x3xf64>
    %all_to_all = shard.all_to_all %1 on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<?x3xf64> -> tensor<?x?xf64>
    %cast = tensor.cast %all_to_all : tensor<?x?xf64> to tensor<9x?xf64>
    %sharding_0 = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %proc_linear_idx_1 = shard.process_multi_index on @grid : index
    %shard_shape_2:2 = shard.shard_shape dims = [9, 3] sharding = %sharding_0 device = [%proc_linear_idx_1] : index, index
    %2 = tensor.empty(%shard_shape_2#1) : tensor<9x?xf64>
    %3 = linalg.exp ins(%cast : tensor<9x?xf64>) outs(%2 : tensor<9x?xf64>) -> tensor<9x?xf64>
    return %3 : tensor<9x?xf64>
  }
}

