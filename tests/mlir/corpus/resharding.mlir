// One resharding per function: the cases of LLVM's
// mlir/test/Dialect/Shard/resharding-partition.mlir (same names, shapes and
// shardings), written for meshrt and partitioned with the public pipeline
// instead of that file's test pass.  Dynamic tensor dims get their sizes from
// the test (tests/mpi/test_mlir_exec.py).
shard.grid @grid2(shape = 2)
shard.grid @grid(shape = ?)

func.func @same_source_and_target_sharding(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<2xf32>
  %s1 = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<2xf32>
  return %1 : tensor<2xf32>
}

func.func @identical_source_and_target_sharding(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<2xf32>
  %1 = shard.shard %0 to %s0 annotate_for_users : tensor<2xf32>
  return %1 : tensor<2xf32>
}

func.func @split_replicated_tensor_axis(%arg0: tensor<3x14xf32>) -> tensor<3x14xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<3x14xf32>
  %s1 = shard.sharding @grid2 split_axes = [[], [0]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<3x14xf32>
  return %1 : tensor<3x14xf32>
}

func.func @split_replicated_tensor_axis_dynamic(%arg0: tensor<?x3x?xf32>) -> tensor<?x3x?xf32> {
  %s0 = shard.sharding @grid split_axes = [[], [], []] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<?x3x?xf32>
  %s1 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<?x3x?xf32>
  return %1 : tensor<?x3x?xf32>
}

func.func @move_split_axis(%arg0: tensor<10x14xf32>) -> tensor<10x14xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<10x14xf32>
  %s1 = shard.sharding @grid2 split_axes = [[], [0]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<10x14xf32>
  return %1 : tensor<10x14xf32>
}

func.func @move_split_axis_dynamic_grid(%arg0: tensor<10x14xf32>) -> tensor<10x14xf32> {
  %s0 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<10x14xf32>
  %s1 = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<10x14xf32>
  return %1 : tensor<10x14xf32>
}

func.func @move_split_dynamic_axis(%arg0: tensor<?x14xf32>) -> tensor<?x14xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<?x14xf32>
  %s1 = shard.sharding @grid2 split_axes = [[], [0]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<?x14xf32>
  return %1 : tensor<?x14xf32>
}

func.func @unshard_static_axis(%arg0: tensor<10x14xf32>) -> tensor<10x14xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<10x14xf32>
  %s1 = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<10x14xf32>
  return %1 : tensor<10x14xf32>
}

func.func @unshard_static_last_axis(%arg0: tensor<10x14xf32>) -> tensor<10x14xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[], [0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<10x14xf32>
  %s1 = shard.sharding @grid2 split_axes = [[], []] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<10x14xf32>
  return %1 : tensor<10x14xf32>
}

func.func @unshard_dynamic_axis(%arg0: tensor<?x14xf32>) -> tensor<?x14xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<?x14xf32>
  %s1 = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<?x14xf32>
  return %1 : tensor<?x14xf32>
}

func.func @unshard_static_axis_on_dynamic_grid_axis(%arg0: tensor<10x14xf32>) -> tensor<10x14xf32> {
  %s0 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<10x14xf32>
  %s1 = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<10x14xf32>
  return %1 : tensor<10x14xf32>
}
