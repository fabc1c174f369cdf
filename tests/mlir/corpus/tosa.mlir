// The tosa ops of LLVM's shard tests (partition.mlir, sharding-propagation.mlir)
// and the affine.apply mlir-opt's partitioner emits, in programs of our own.
// tests/mpi/test_mlir_exec.py runs the partitioned file against this one run
// in global mode, and that against numpy.
shard.grid @grid(shape = ?)
shard.grid @g22(shape = 2x2)

// a partial reduction over both axes of a 2x2 grid: the partitioned program
// picks the device that keeps the init by affine.apply of its multi-index
func.func @matmul_k_split(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %sa = shard.sharding @g22 split_axes = [[], [0, 1]] : !shard.sharding
  %a0 = shard.shard %a to %sa annotate_for_users : tensor<4x8xf32>
  %sb = shard.sharding @g22 split_axes = [[0, 1]] : !shard.sharding
  %b0 = shard.shard %b to %sb annotate_for_users : tensor<8x6xf32>
  %e = tensor.empty() : tensor<4x6xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %c = linalg.matmul ins(%a0, %b0 : tensor<4x8xf32>, tensor<8x6xf32>) outs(%f : tensor<4x6xf32>) -> tensor<4x6xf32>
  %sr = shard.sharding @g22 split_axes = [[]] : !shard.sharding
  %r = shard.shard %c to %sr : tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// elementwise tosa ops on row blocks, resharded to columns half way
func.func @tosa_chain(%x: tensor<12x8xf32>, %y: tensor<12x8xf32>, %zp: tensor<1xf32>) -> tensor<12x8xf32> {
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %x0 = shard.shard %x to %rows annotate_for_users : tensor<12x8xf32>
  %y0 = shard.shard %y to %rows annotate_for_users : tensor<12x8xf32>
  %0 = tosa.sigmoid %x0 : (tensor<12x8xf32>) -> tensor<12x8xf32>
  %1 = tosa.tanh %y0 : (tensor<12x8xf32>) -> tensor<12x8xf32>
  %2 = tosa.add %0, %1 : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x8xf32>
  %3 = tosa.abs %2 : (tensor<12x8xf32>) -> tensor<12x8xf32>
  %4 = shard.shard %3 to %rows : tensor<12x8xf32>
  %5 = shard.shard %4 to %cols annotate_for_users : tensor<12x8xf32>
  %6 = tosa.exp %5 : (tensor<12x8xf32>) -> tensor<12x8xf32>
  %7 = tosa.log %6 : (tensor<12x8xf32>) -> tensor<12x8xf32>
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %zp0 = shard.shard %zp to %rep annotate_for_users : tensor<1xf32>
  %8 = tosa.negate %7, %zp0, %zp0 : (tensor<12x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<12x8xf32>
  %9 = tosa.clamp %8 {min_val = -1.5 : f32, max_val = 0.0 : f32} : (tensor<12x8xf32>) -> tensor<12x8xf32>
  %10 = tosa.maximum %9, %7 : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x8xf32>
  %11 = tosa.sub %10, %9 : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x8xf32>
  %12 = tosa.minimum %11, %10 : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x8xf32>
  %r = shard.shard %12 to %cols : tensor<12x8xf32>
  return %r : tensor<12x8xf32>
}
