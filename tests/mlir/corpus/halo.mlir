// Halo shardings.  Written for meshrt; the cases follow test_shard_update_halo
// and test_shard_update_halo2d of LLVM's mlir/test/Dialect/Shard/partition.mlir.
// (Its ew_chain_with_halo uses tosa ops; with linalg ops in their place
// mlir-opt 22 computes a garbage shape, so that case is left out.)
// Static grids: mlir-opt 22 fails on halos over a dynamic grid axis.
shard.grid @grid(shape = 4)
shard.grid @grid2(shape = 2)
shard.grid @grid2d(shape = 2x2)

func.func @update_halo_1d(%arg0: tensor<16x12xi64>) -> tensor<16x12xi64> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s : tensor<16x12xi64>
  %h = shard.sharding @grid split_axes = [[0]] halo_sizes = [2, 2] : !shard.sharding
  %1 = shard.shard %0 to %h : tensor<16x12xi64>
  %2 = shard.shard %1 to %h annotate_for_users : tensor<16x12xi64>
  return %2 : tensor<16x12xi64>
}

func.func @update_halo_1d_grid2(%arg0: tensor<16x12xi64>) -> tensor<16x12xi64> {
  %s = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s : tensor<16x12xi64>
  %h = shard.sharding @grid2 split_axes = [[0]] halo_sizes = [2, 2] : !shard.sharding
  %1 = shard.shard %0 to %h : tensor<16x12xi64>
  %2 = shard.shard %1 to %h annotate_for_users : tensor<16x12xi64>
  return %2 : tensor<16x12xi64>
}

func.func @update_halo_2d(%arg0: tensor<8x12xi64>) -> tensor<8x12xi64> {
  %s = shard.sharding @grid2d split_axes = [[0], [1]] : !shard.sharding
  %0 = shard.shard %arg0 to %s : tensor<8x12xi64>
  %h = shard.sharding @grid2d split_axes = [[0], [1]] halo_sizes = [1, 2, 1, 1] : !shard.sharding
  %1 = shard.shard %0 to %h : tensor<8x12xi64>
  %2 = shard.shard %1 to %h annotate_for_users : tensor<8x12xi64>
  return %2 : tensor<8x12xi64>
}
