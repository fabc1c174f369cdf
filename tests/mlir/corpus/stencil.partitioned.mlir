// Per-process form of stencil.mlir, written by hand for meshrt.  %x is this
// process's rows of the global array with one halo row each side; the first and
// last process keep their boundary row fixed.
shard.grid @grid(shape = ?)

func.func @heat(%x: tensor<?x8xf64>, %steps: index) -> tensor<?x8xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %k = arith.constant 2.500000e-01 : f64
  %two = arith.constant 2.000000e+00 : f64
  %n = tensor.dim %x, %c0 : tensor<?x8xf64>
  %p = shard.process_multi_index on @grid axes = [0] : index
  %g = shard.grid_shape @grid axes = [0] : index
  %glast = arith.subi %g, %c1 : index
  %first = arith.cmpi eq, %p, %c0 : index
  %last = arith.cmpi eq, %p, %glast : index
  %lo = arith.select %first, %c2, %c1 : index
  %nm1 = arith.subi %n, %c1 : index
  %nm2 = arith.subi %n, %c2 : index
  %hi = arith.select %last, %nm2, %nm1 : index
  %len = arith.subi %hi, %lo : index
  %lo_m1 = arith.subi %lo, %c1 : index
  %lo_p1 = arith.addi %lo, %c1 : index
  %twos = tensor.splat %two[%len] : tensor<?x8xf64>
  %kk = tensor.splat %k[%len] : tensor<?x8xf64>
  %r = scf.for %t = %c0 to %steps step %c1 iter_args(%u = %x) -> (tensor<?x8xf64>) {
    %uh = shard.update_halo %u on @grid split_axes = [[0]] halo_sizes = [1, 1] : tensor<?x8xf64>
    %up = tensor.extract_slice %uh[%lo_m1, 0] [%len, 8] [1, 1] : tensor<?x8xf64> to tensor<?x8xf64>
    %mid = tensor.extract_slice %uh[%lo, 0] [%len, 8] [1, 1] : tensor<?x8xf64> to tensor<?x8xf64>
    %dn = tensor.extract_slice %uh[%lo_p1, 0] [%len, 8] [1, 1] : tensor<?x8xf64> to tensor<?x8xf64>
    %s = arith.addf %up, %dn : tensor<?x8xf64>
    %m2 = arith.mulf %mid, %twos : tensor<?x8xf64>
    %lap = arith.subf %s, %m2 : tensor<?x8xf64>
    %d = arith.mulf %lap, %kk : tensor<?x8xf64>
    %new = arith.addf %mid, %d : tensor<?x8xf64>
    %u2 = tensor.insert_slice %new into %uh[%lo, 0] [%len, 8] [1, 1] : tensor<?x8xf64> into tensor<?x8xf64>
    scf.yield %u2 : tensor<?x8xf64>
  }
  return %r : tensor<?x8xf64>
}
