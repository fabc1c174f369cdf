// The MLP on a 2-D grid: the batch split over grid axis 0, the weights stationary
// over grid axis 1 (as mlp.mlir).  Written for meshrt.
shard.grid @grid(shape = 2x?)
func.func @mlp2d(%x: tensor<8x32xf32>, %w1: tensor<32x64xf32>, %w2: tensor<64x32xf32>) -> tensor<8x32xf32> {
  %s_x = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %s_b = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %s_h = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %s_w1 = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %s_w2 = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %xa = shard.shard %x to %s_x : tensor<8x32xf32>
  %w1a = shard.shard %w1 to %s_w1 : tensor<32x64xf32>
  %w2a = shard.shard %w2 to %s_w2 : tensor<64x32xf32>
  %xr = shard.shard %xa to %s_b annotate_for_users : tensor<8x32xf32>
  %w1u = shard.shard %w1a to %s_w1 annotate_for_users : tensor<32x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64xf32>
  %ea = shard.shard %e to %s_h : tensor<8x64xf32>
  %eu = shard.shard %ea to %s_h annotate_for_users : tensor<8x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eu : tensor<8x64xf32>) -> tensor<8x64xf32>
  %fa = shard.shard %f to %s_h : tensor<8x64xf32>
  %fu = shard.shard %fa to %s_h annotate_for_users : tensor<8x64xf32>
  %h = linalg.matmul ins(%xr, %w1u : tensor<8x32xf32>, tensor<32x64xf32>) outs(%fu : tensor<8x64xf32>) -> tensor<8x64xf32>
  %ha = shard.shard %h to %s_h : tensor<8x64xf32>
  %hu = shard.shard %ha to %s_h annotate_for_users : tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %e2a = shard.shard %e2 to %s_h : tensor<8x64xf32>
  %e2u = shard.shard %e2a to %s_h annotate_for_users : tensor<8x64xf32>
  %r = linalg.max ins(%hu, %fu : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e2u : tensor<8x64xf32>) -> tensor<8x64xf32>
  %ra = shard.shard %r to %s_h : tensor<8x64xf32>
  %ru = shard.shard %ra to %s_h annotate_for_users : tensor<8x64xf32>
  %w2u = shard.shard %w2a to %s_w2 annotate_for_users : tensor<64x32xf32>
  %e3 = tensor.empty() : tensor<8x32xf32>
  %e3a = shard.shard %e3 to %s_b : tensor<8x32xf32>
  %e3u = shard.shard %e3a to %s_b annotate_for_users : tensor<8x32xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3u : tensor<8x32xf32>) -> tensor<8x32xf32>
  %f3a = shard.shard %f3 to %s_b : tensor<8x32xf32>
  %f3u = shard.shard %f3a to %s_b annotate_for_users : tensor<8x32xf32>
  %y = linalg.matmul ins(%ru, %w2u : tensor<8x64xf32>, tensor<64x32xf32>) outs(%f3u : tensor<8x32xf32>) -> tensor<8x32xf32>
  %ya = shard.shard %y to %s_b : tensor<8x32xf32>
  %yu = shard.shard %ya to %s_x annotate_for_users : tensor<8x32xf32>
  return %yu : tensor<8x32xf32>
}
