// A 1-D heat stencil (3 points along dim 0, boundary rows fixed), `steps` time
// steps in an scf.for.  The global program: rows split over the grid with one
// halo row each side.  Written for meshrt; stencil.partitioned.mlir is its
// per-process form, written by hand (shard-partition does not partition
// tensor.extract_slice windows), which exchanges halos with shard.update_halo.
shard.grid @grid(shape = ?)

func.func @heat(%x: tensor<16x8xf64>, %steps: index) -> tensor<16x8xf64> {
  %h = shard.sharding @grid split_axes = [[0]] halo_sizes = [1, 1] : !shard.sharding
  %xs = shard.shard %x to %h : tensor<16x8xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %k = arith.constant 2.500000e-01 : f64
  %two = arith.constant dense<2.000000e+00> : tensor<14x8xf64>
  %r = scf.for %t = %c0 to %steps step %c1 iter_args(%u = %xs) -> (tensor<16x8xf64>) {
    %up = tensor.extract_slice %u[0, 0] [14, 8] [1, 1] : tensor<16x8xf64> to tensor<14x8xf64>
    %mid = tensor.extract_slice %u[1, 0] [14, 8] [1, 1] : tensor<16x8xf64> to tensor<14x8xf64>
    %dn = tensor.extract_slice %u[2, 0] [14, 8] [1, 1] : tensor<16x8xf64> to tensor<14x8xf64>
    %s = arith.addf %up, %dn : tensor<14x8xf64>
    %m2 = arith.mulf %mid, %two : tensor<14x8xf64>
    %lap = arith.subf %s, %m2 : tensor<14x8xf64>
    %kk = tensor.splat %k : tensor<14x8xf64>
    %d = arith.mulf %lap, %kk : tensor<14x8xf64>
    %new = arith.addf %mid, %d : tensor<14x8xf64>
    %u2 = tensor.insert_slice %new into %u[1, 0] [14, 8] [1, 1] : tensor<14x8xf64> into tensor<16x8xf64>
    scf.yield %u2 : tensor<16x8xf64>
  }
  %rs = shard.shard %r to %h annotate_for_users : tensor<16x8xf64>
  return %rs : tensor<16x8xf64>
}
