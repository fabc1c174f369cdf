// Every shard dialect op in custom form (LLVM 22 syntax); the grids and shardings include every
// grid and sharding form of LLVM's mlir/test/Dialect/Shard/ops.mlir.
shard.grid @grid0(shape = 2x2x4)
shard.grid @grid1(shape = 4x?)
shard.grid @grid2(shape = ?x4)
shard.grid @grid3(shape = ?x?)
shard.grid @grid4(shape = 3)
shard.grid @grid5(shape = ?)
shard.grid @grid6(shape = 8)

func.func @shardings(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8x16xf32>, %h: i64) -> tensor<4x8xf32> {
  %s0 = shard.sharding @grid0 split_axes = [[]] : !shard.sharding
  %s1 = shard.sharding @grid0 split_axes = [[0]] : !shard.sharding
  %s2 = shard.sharding @grid1 split_axes = [[], [0]] : !shard.sharding
  %s3 = shard.sharding @grid3 split_axes = [[0], [], [1]] : !shard.sharding
  %s4 = shard.sharding @grid0 split_axes = [[0, 2], [1]] : !shard.sharding
  %s5 = shard.sharding @grid4 split_axes = [[0]] halo_sizes = [1, 4] : !shard.sharding
  %s6 = shard.sharding @grid4 split_axes = [[0]] halo_sizes = [4, %h] : !shard.sharding
  %s7 = shard.sharding @grid4 split_axes = [[0]] sharded_dims_offsets = [0, 1, 4, 6] : !shard.sharding
  %s8 = shard.sharding @grid4 split_axes = [[0]] sharded_dims_offsets = [0, 2, %h, 5] : !shard.sharding
  %s9 = shard.sharding @grid0 split_axes = [[0], [1, 2]] halo_sizes = [1, 2, %h, 3] : !shard.sharding
  %s10 = shard.sharding @grid0 split_axes = [[1]] : !shard.sharding
  %s11 = shard.sharding @grid0 split_axes = [[2]] : !shard.sharding
  %s12 = shard.sharding @grid2 split_axes = [[], [1], [0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s1 : tensor<4x8xf32>
  %1 = shard.shard %0 to %s4 annotate_for_users : tensor<4x8xf32>
  %2 = shard.shard %arg1 to %s3 : tensor<4x8x16xf32>
  %g = shard.get_sharding %1 : tensor<4x8xf32> -> !shard.sharding
  return %1 : tensor<4x8xf32>
}

func.func @index_ops(%i: index) -> (index, index) {
  %c3 = arith.constant 3 : index
  %s = shard.sharding @grid0 split_axes = [[]] : !shard.sharding
  %shp:2 = shard.shard_shape dims = [8, %c3] sharding = %s device = [%c3] : index, index
  %shp1:2 = shard.shard_shape dims = [8, 4] sharding = %s device = [3] : index, index
  %gs:2 = shard.grid_shape @grid0 axes = [0, 1] : index, index
  %gs3:3 = shard.grid_shape @grid0 : index, index, index
  %gs4:3 = shard.grid_shape @grid0 axes = [] : index, index, index
  %pm:2 = shard.process_multi_index on @grid0 axes = [0, 1] : index, index
  %pm3:3 = shard.process_multi_index on @grid0 : index, index, index
  %pm4:3 = shard.process_multi_index on @grid0 axes = [] : index, index, index
  %pl = shard.process_linear_index on @grid0 : index
  %nb:2 = shard.neighbors_linear_indices on @grid0[%i, %c3, %i] split_axes = [1] : index, index
  %nb2:2 = shard.neighbors_linear_indices on @grid0[%i, %c3, %i] split_axes = [2, 0] : index, index
  return %gs#0, %pm#1 : index, index
}

func.func @collectives(%a: tensor<3x4xf32>, %d: tensor<?x?xf32>, %q: tensor<3x6xi8>, %r: tensor<2xi8>, %idx: index) {
  %0 = shard.all_reduce %a on @grid0 grid_axes = [1, 0] reduction = max : tensor<3x4xf32> -> tensor<3x4xf64>
  %1 = shard.all_reduce %a on @grid0 : tensor<3x4xf32> -> tensor<3x4xf32>
  %2 = shard.all_gather %a on @grid0 grid_axes = [2] gather_axis = 1 : tensor<3x4xf32> -> tensor<3x16xf32>
  %3 = shard.all_gather %d on @grid3 grid_axes = [1] gather_axis = 1 : tensor<?x?xf32> -> tensor<?x?xf32>
  %4 = shard.all_slice %a on @grid0 grid_axes = [2] slice_axis = 1 : tensor<3x4xf32> -> tensor<3x1xf32>
  %5 = shard.all_to_all %q on @grid4 grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<3x6xi8> -> tensor<9x2xi8>
  %6 = shard.all_to_all %q on @grid0 grid_axes = [0, 1] split_axis = 0 concat_axis = 1 : tensor<3x6xi8> -> tensor<?x24xi8>
  %7 = shard.broadcast %q on @grid0 grid_axes = [0, 2] root = [0, 1] : (tensor<3x6xi8>) -> tensor<3x6xi8>
  %8 = shard.broadcast %q on @grid0 grid_axes = [0, 2] root = [1, %idx] : (tensor<3x6xi8>, index) -> tensor<3x6xi8>
  %9 = shard.gather %q on @grid0 grid_axes = [0, 2] gather_axis = 0 root = [0, 1] : (tensor<3x6xi8>) -> tensor<24x6xi8>
  %10 = shard.gather %q on @grid0 grid_axes = [0, 2] gather_axis = 0 root = [1, %idx] : (tensor<3x6xi8>, index) -> tensor<24x6xi8>
  %11 = shard.recv %r on @grid0 grid_axes = [0, 2] source = [0, 1] : (tensor<2xi8>) -> tensor<2xi8>
  %12 = shard.recv %r on @grid0 grid_axes = [0, 2] source = [1, %idx] : (tensor<2xi8>, index) -> tensor<2xi8>
  %13 = shard.recv %r on @grid0 grid_axes = [0, 2] : (tensor<2xi8>) -> tensor<2xi8>
  %14 = shard.reduce %r on @grid0 grid_axes = [0, 2] root = [0, 1] : (tensor<2xi8>) -> tensor<2xi8>
  %15 = shard.reduce %r on @grid0 grid_axes = [0, 2] reduction = min root = [1, %idx] : (tensor<2xi8>, index) -> tensor<2xi16>
  %16 = shard.reduce_scatter %a on @grid0 grid_axes = [2] reduction = max scatter_axis = 1 : tensor<3x4xf32> -> tensor<3x1xf64>
  %17 = shard.reduce_scatter %d on @grid3 grid_axes = [0, 1] scatter_axis = 0 : tensor<?x?xf32> -> tensor<?x?xf64>
  %18 = shard.scatter %a on @grid0 grid_axes = [2] scatter_axis = 1 root = [1] : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %19 = shard.scatter %d on @grid0 grid_axes = [0, 2] scatter_axis = 1 root = [1, %idx] : (tensor<?x?xf32>, index) -> tensor<?x?xf32>
  %20 = shard.send %r on @grid0 grid_axes = [0, 2] destination = [0, 1] : (tensor<2xi8>) -> tensor<2xi8>
  %21 = shard.send %r on @grid0 grid_axes = [0, 2] destination = [1, %idx] : (tensor<2xi8>, index) -> tensor<2xi8>
  %22 = shard.shift %r on @grid0 grid_axes = [0, 2] shift_axis = 2 offset = -2 rotate : tensor<2xi8> -> tensor<2xi8>
  %23 = shard.shift %r on @grid6 grid_axes = [0] shift_axis = 0 offset = 1 : tensor<2xi8> -> tensor<2xi8>
  %24 = shard.all_reduce %a on @grid0 grid_axes = [0] reduction = product : tensor<3x4xf32> -> tensor<3x4xf32>
  %25 = shard.all_reduce %q on @grid0 grid_axes = [0] reduction = bitwise_or : tensor<3x6xi8> -> tensor<3x6xi8>
  return
}

func.func @halo(%arg0: tensor<12x12xf32>, %m: memref<12x12xi8>) -> tensor<12x12xf32> {
  %c2 = arith.constant 2 : i64
  %uh1 = shard.update_halo %m on @grid0 split_axes = [[0]] halo_sizes = [2, %c2] : memref<12x12xi8>
  %uh2 = shard.update_halo %uh1 on @grid0 split_axes = [[0], [1]] halo_sizes = [2, 2, %c2, 2] : memref<12x12xi8>
  %uh3 = shard.update_halo %arg0 on @grid0 split_axes = [[0], [1, 2]] halo_sizes = [1, 1, 2, 2] : tensor<12x12xf32>
  %uh4 = shard.update_halo %arg0 on @grid0 split_axes = [[0]] : tensor<12x12xf32>
  return %uh3 : tensor<12x12xf32>
}
