// Generated from resharding.mlir by mlir-opt 22 (tests/test_mlir_cli.py regenerates and compares):
//   mlir-opt --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" resharding.mlir
module {
  shard.grid @grid2(shape = 2)
  shard.grid @grid(shape = ?)
  func.func @same_source_and_target_sharding(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    return %arg0 : tensor<2xf32>
  }
  func.func @identical_source_and_target_sharding(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    return %arg0 : tensor<2xf32>
  }
  func.func @split_replicated_tensor_axis(%arg0: tensor<3x14xf32>) -> tensor<3x7xf32> {
    %all_slice = shard.all_slice %arg0 on @grid2 grid_axes = [0] slice_axis = 1 : tensor<3x14xf32> -> tensor<3x7xf32>
    return %all_slice : tensor<3x7xf32>
  }
  func.func @split_replicated_tensor_axis_dynamic(%arg0: tensor<?x3x?xf32>) -> tensor<?x3x?xf32> {
    %all_slice = shard.all_slice %arg0 on @grid grid_axes = [0] slice_axis = 0 : tensor<?x3x?xf32> -> tensor<?x3x?xf32>
    return %all_slice : tensor<?x3x?xf32>
  }
  func.func @move_split_axis(%arg0: tensor<5x14xf32>) -> tensor<10x7xf32> {
    %all_to_all = shard.all_to_all %arg0 on @grid2 grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<5x14xf32> -> tensor<10x7xf32>
    %cast = tensor.cast %all_to_all : tensor<10x7xf32> to tensor<10x7xf32>
    return %cast : tensor<10x7xf32>
  }
  func.func @move_split_axis_dynamic_grid(%arg0: tensor<?x14xf32>) -> tensor<10x?xf32> {
    %all_to_all = shard.all_to_all %arg0 on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<?x14xf32> -> tensor<?x?xf32>
    %cast = tensor.cast %all_to_all : tensor<?x?xf32> to tensor<10x?xf32>
    return %cast : tensor<10x?xf32>
  }
  func.func @move_split_dynamic_axis(%arg0: tensor<?x14xf32>) -> tensor<?x7xf32> {
    %all_to_all = shard.all_to_all %arg0 on @grid2 grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<?x14xf32> -> tensor<?x7xf32>
    %cast = tensor.cast %all_to_all : tensor<?x7xf32> to tensor<?x7xf32>
    return %cast : tensor<?x7xf32>
  }
  func.func @unshard_static_axis(%arg0: tensor<5x14xf32>) -> tensor<10x14xf32> {
    %all_gather = shard.all_gather %arg0 on @grid2 grid_axes = [0] gather_axis = 0 : tensor<5x14xf32> -> tensor<10x14xf32>
    %cast = tensor.cast %all_gather : tensor<10x14xf32> to tensor<10x14xf32>
    return %cast : tensor<10x14xf32>
  }
  func.func @unshard_static_last_axis(%arg0: tensor<10x7xf32>) -> tensor<10x14xf32> {
    %all_gather = shard.all_gather %arg0 on @grid2 grid_axes = [0] gather_axis = 1 : tensor<10x7xf32> -> tensor<10x14xf32>
    %cast = tensor.cast %all_gather : tensor<10x14xf32> to tensor<10x14xf32>
    return %cast : tensor<10x14xf32>
  }
  func.func @unshard_dynamic_axis(%arg0: tensor<?x14xf32>) -> tensor<?x14xf32> {
    %all_gather = shard.all_gather %arg0 on @grid2 grid_axes = [0] gather_axis = 0 : tensor<?x14xf32> -> tensor<?x14xf32>
    %cast = tensor.cast %all_gather : tensor<?x14xf32> to tensor<?x14xf32>
    return %cast : tensor<?x14xf32>
  }
  func.func @unshard_static_axis_on_dynamic_grid_axis(%arg0: tensor<?x14xf32>) -> tensor<10x14xf32> {
    %all_gather = shard.all_gather %arg0 on @grid grid_axes = [0] gather_axis = 0 : tensor<?x14xf32> -> tensor<?x14xf32>
    %cast = tensor.cast %all_gather : tensor<?x14xf32> to tensor<10x14xf32>
    return %cast : tensor<10x14xf32>
  }
}

