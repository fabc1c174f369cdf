// Bufferized shard programs, written for meshrt: the shard collectives LLVM 22 takes on memrefs
// (all_reduce, update_halo), with the memref and bufferization ops around them.  tools/lower_corpus.py
// lowers this file with mlir-opt --convert-shard-to-mpi (buffers.bufferized.mpi.mlir);
// tests/mpi/test_mlir_lowered.py runs both on the processes and compares them and numpy.
shard.grid @g2(shape = 2)
shard.grid @g22(shape = 2x2)

// all_reduce of a memref: a new buffer, the operand unchanged
func.func @allreduce_memref(%a: memref<3x4xf32>) -> memref<3x4xf32> {
  %0 = shard.all_reduce %a on @g2 grid_axes = [0] reduction = max : memref<3x4xf32> -> memref<3x4xf32>
  return %0 : memref<3x4xf32>
}

// over one axis of a 2-D grid, into a wider element type
func.func @allreduce_new_type(%a: memref<3x4xf32>) -> memref<3x4xf64> {
  %0 = shard.all_reduce %a on @g22 grid_axes = [1] : memref<3x4xf32> -> memref<3x4xf64>
  return %0 : memref<3x4xf64>
}

// a tensor reduced into a memref result, read back as a tensor
func.func @allreduce_tensor_to_memref(%t: tensor<6xi32>) -> tensor<6xi32> {
  %0 = shard.all_reduce %t on @g22 grid_axes = [0, 1] : tensor<6xi32> -> memref<6xi32>
  %1 = bufferization.to_tensor %0 restrict : memref<6xi32> to tensor<6xi32>
  return %1 : tensor<6xi32>
}

// update_halo on a memref: updated in place; the result is the operand
func.func @update_halo_memref(%a: memref<6x5xi64>) -> memref<6x5xi64> {
  %0 = shard.update_halo %a on @g2 split_axes = [[0]] halo_sizes = [1, 2] : memref<6x5xi64>
  return %0 : memref<6x5xi64>
}

// 2-D halos on a 2x2 grid, of a subview (the update writes through into the whole buffer)
func.func @update_halo_subview(%a: memref<8x9xf64>) -> memref<8x9xf64> {
  %s = memref.subview %a[1, 1] [6, 7] [1, 1] : memref<8x9xf64> to memref<6x7xf64, strided<[9, 1], offset: 10>>
  %0 = shard.update_halo %s on @g22 split_axes = [[0], [1]] halo_sizes = [1, 1, 1, 1] : memref<6x7xf64, strided<[9, 1], offset: 10>>
  return %a : memref<8x9xf64>
}

// the memref ops around a collective: alloc, copy, subview, load/store, collapse, cast, dealloc
func.func @buffers_around(%a: memref<4x4xf32>, %i: index) -> (memref<16xf32>, f32) {
  %b = memref.alloc() : memref<4x4xf32>
  memref.copy %a, %b : memref<4x4xf32> to memref<4x4xf32>
  %row = memref.subview %b[%i, 0] [1, 4] [1, 1] : memref<4x4xf32> to memref<4xf32, strided<[1], offset: ?>>
  %c0 = arith.constant 0 : index
  %v = memref.load %row[%c0] : memref<4xf32, strided<[1], offset: ?>>
  %w = arith.mulf %v, %v : f32
  %c3 = arith.constant 3 : index
  memref.store %w, %row[%c3] : memref<4xf32, strided<[1], offset: ?>>
  %r = shard.all_reduce %b on @g2 grid_axes = [0] : memref<4x4xf32> -> memref<4x4xf32>
  %flat = memref.collapse_shape %r [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  %d = memref.cast %flat : memref<16xf32> to memref<?xf32>
  %e = memref.cast %d : memref<?xf32> to memref<16xf32>
  %x = memref.load %e[%c3] : memref<16xf32>
  memref.dealloc %b : memref<4x4xf32>
  return %e, %x : memref<16xf32>, f32
}
