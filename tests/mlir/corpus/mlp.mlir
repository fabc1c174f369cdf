// The weight-stationary MLP of the mesh-sharding RFC on a 1-D grid (examples/mlp.py):
// x split on its last dim, W1 on dim 1, W2 on dim 0.  Each device all-gathers x,
// multiplies by its W1 columns, applies relu, multiplies by its W2 rows (a partial
// sum), all-reduces, and slices the result back to x's sharding.  Written for meshrt.
shard.grid @grid(shape = ?)
func.func @mlp(%x: tensor<8x32xf64>, %w1: tensor<32x64xf64>, %w2: tensor<64x32xf64>) -> tensor<8x32xf64> {
  %s_col = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %s_row = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %s_rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xa = shard.shard %x to %s_col : tensor<8x32xf64>
  %w1a = shard.shard %w1 to %s_col : tensor<32x64xf64>
  %w2a = shard.shard %w2 to %s_row : tensor<64x32xf64>
  %xr = shard.shard %xa to %s_rep annotate_for_users : tensor<8x32xf64>
  %w1u = shard.shard %w1a to %s_col annotate_for_users : tensor<32x64xf64>
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<8x64xf64>
  %ea = shard.shard %e to %s_col : tensor<8x64xf64>
  %eu = shard.shard %ea to %s_col annotate_for_users : tensor<8x64xf64>
  %f = linalg.fill ins(%zero : f64) outs(%eu : tensor<8x64xf64>) -> tensor<8x64xf64>
  %fa = shard.shard %f to %s_col : tensor<8x64xf64>
  %fu = shard.shard %fa to %s_col annotate_for_users : tensor<8x64xf64>
  %h = linalg.matmul ins(%xr, %w1u : tensor<8x32xf64>, tensor<32x64xf64>) outs(%fu : tensor<8x64xf64>) -> tensor<8x64xf64>
  %ha = shard.shard %h to %s_col : tensor<8x64xf64>
  %hu = shard.shard %ha to %s_col annotate_for_users : tensor<8x64xf64>
  %e2 = tensor.empty() : tensor<8x64xf64>
  %e2a = shard.shard %e2 to %s_col : tensor<8x64xf64>
  %e2u = shard.shard %e2a to %s_col annotate_for_users : tensor<8x64xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%hu : tensor<8x64xf64>) outs(%e2u : tensor<8x64xf64>) {
  ^bb0(%a: f64, %o: f64):
    %m = arith.maximumf %a, %zero : f64
    linalg.yield %m : f64
  } -> tensor<8x64xf64>
  %ra = shard.shard %r to %s_col : tensor<8x64xf64>
  %ru = shard.shard %ra to %s_col annotate_for_users : tensor<8x64xf64>
  %w2u = shard.shard %w2a to %s_row annotate_for_users : tensor<64x32xf64>
  %e3 = tensor.empty() : tensor<8x32xf64>
  %e3a = shard.shard %e3 to %s_rep : tensor<8x32xf64>
  %e3u = shard.shard %e3a to %s_rep annotate_for_users : tensor<8x32xf64>
  %f3 = linalg.fill ins(%zero : f64) outs(%e3u : tensor<8x32xf64>) -> tensor<8x32xf64>
  %f3a = shard.shard %f3 to %s_rep : tensor<8x32xf64>
  %f3u = shard.shard %f3a to %s_rep annotate_for_users : tensor<8x32xf64>
  %y = linalg.matmul ins(%ru, %w2u : tensor<8x64xf64>, tensor<64x32xf64>) outs(%f3u : tensor<8x32xf64>) -> tensor<8x32xf64>
  %ya = shard.shard %y to %s_rep : tensor<8x32xf64>
  %yu = shard.shard %ya to %s_col annotate_for_users : tensor<8x32xf64>
  return %yu : tensor<8x32xf64>
}
