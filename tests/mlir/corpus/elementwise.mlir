// Elementwise chains with resharding between the ops.  Written for meshrt; the
// cases follow the functions of LLVM's mlir/test/Dialect/Shard/partition.mlir
// (return_sharding, full_replication, sharding_triplet, move_split_axis,
// unary_elementwise(_with_resharding), binary_elementwise, multiple_chained_ops,
// incomplete_sharding), with tosa ops replaced by linalg named ops.
shard.grid @grid(shape = ?)
shard.grid @grid2(shape = 2)

func.func @return_sharding(%arg0: tensor<8xf32>) -> (tensor<8xf32>, !shard.sharding) {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s : tensor<8xf32>
  %r = shard.get_sharding %0 : tensor<8xf32> -> !shard.sharding
  %1 = shard.shard %0 to %s annotate_for_users : tensor<8xf32>
  return %1, %r : tensor<8xf32>, !shard.sharding
}

func.func @full_replication(%arg0: tensor<6xi8>) -> tensor<6xi8> {
  %s0 = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %s0 : tensor<6xi8>
  %1 = shard.shard %0 to %s0 annotate_for_users : tensor<6xi8>
  return %1 : tensor<6xi8>
}

func.func @sharding_triplet(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %split : tensor<8xf32>
  %1 = shard.shard %0 to %split annotate_for_users : tensor<8xf32>
  %2 = shard.shard %1 to %rep annotate_for_users : tensor<8xf32>
  return %2 : tensor<8xf32>
}

func.func @move_split_axis(%arg0: tensor<8x8xi8>) -> tensor<8x8xi8> {
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %0 = shard.shard %arg0 to %rows : tensor<8x8xi8>
  %1 = shard.shard %0 to %cols annotate_for_users : tensor<8x8xi8>
  return %1 : tensor<8x8xi8>
}

func.func @unary_elementwise(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %split : tensor<8xf32>
  %1 = shard.shard %0 to %split annotate_for_users : tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %2 = linalg.abs ins(%1 : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %3 = shard.shard %2 to %split : tensor<8xf32>
  %4 = shard.shard %3 to %split annotate_for_users : tensor<8xf32>
  return %4 : tensor<8xf32>
}

// replicated -> split -> exp -> split -> replicated
func.func @unary_elementwise_with_resharding(%arg0: tensor<12xf64>) -> tensor<12xf64> {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %rep : tensor<12xf64>
  %1 = shard.shard %0 to %split annotate_for_users : tensor<12xf64>
  %e = tensor.empty() : tensor<12xf64>
  %2 = linalg.exp ins(%1 : tensor<12xf64>) outs(%e : tensor<12xf64>) -> tensor<12xf64>
  %3 = shard.shard %2 to %split : tensor<12xf64>
  %4 = shard.shard %3 to %rep annotate_for_users : tensor<12xf64>
  return %4 : tensor<12xf64>
}

func.func @binary_elementwise(%arg0: tensor<8x6xf32>, %arg1: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %split : tensor<8x6xf32>
  %1 = shard.shard %0 to %split annotate_for_users : tensor<8x6xf32>
  %2 = shard.shard %arg1 to %split : tensor<8x6xf32>
  %3 = shard.shard %2 to %split annotate_for_users : tensor<8x6xf32>
  %e = tensor.empty() : tensor<8x6xf32>
  %4 = linalg.add ins(%1, %3 : tensor<8x6xf32>, tensor<8x6xf32>) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %5 = shard.shard %4 to %split : tensor<8x6xf32>
  %6 = shard.shard %5 to %split annotate_for_users : tensor<8x6xf32>
  return %6 : tensor<8x6xf32>
}

// reshard, negf, reshard, tanh, reshard: on a grid of 2 (static shapes)
func.func @multiple_chained_ops(%arg0: tensor<6xf64>) -> tensor<6xf64> {
  %rep = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %split = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %rep : tensor<6xf64>
  %1 = shard.shard %0 to %split annotate_for_users : tensor<6xf64>
  %e = tensor.empty() : tensor<6xf64>
  %2 = linalg.negf ins(%1 : tensor<6xf64>) outs(%e : tensor<6xf64>) -> tensor<6xf64>
  %3 = shard.shard %2 to %split : tensor<6xf64>
  %4 = shard.shard %3 to %rep annotate_for_users : tensor<6xf64>
  %f = tensor.empty() : tensor<6xf64>
  %5 = linalg.tanh ins(%4 : tensor<6xf64>) outs(%f : tensor<6xf64>) -> tensor<6xf64>
  %6 = shard.shard %5 to %rep : tensor<6xf64>
  %7 = shard.shard %6 to %split annotate_for_users : tensor<6xf64>
  return %7 : tensor<6xf64>
}

func.func @incomplete_sharding(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %split annotate_for_users : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %1 = linalg.sqrt ins(%0 : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = shard.shard %1 to %split : tensor<8x16xf32>
  %3 = shard.shard %2 to %split annotate_for_users : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}

// A longer chain through linalg.generic bodies (arith + math), uneven, with empty
// column shards at 4 processes and more.
func.func @generic_chain(%a: tensor<9x3xf64>, %b: tensor<9x3xf64>) -> tensor<9x3xf64> {
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %a0 = shard.shard %a to %rows : tensor<9x3xf64>
  %a1 = shard.shard %a0 to %rows annotate_for_users : tensor<9x3xf64>
  %b0 = shard.shard %b to %rows : tensor<9x3xf64>
  %b1 = shard.shard %b0 to %rows annotate_for_users : tensor<9x3xf64>
  %e = tensor.empty() : tensor<9x3xf64>
  %c2 = arith.constant 2.0 : f64
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a1, %b1 : tensor<9x3xf64>, tensor<9x3xf64>) outs(%e : tensor<9x3xf64>) {
  ^bb0(%x: f64, %y: f64, %o: f64):
    %t = math.tanh %x : f64
    %m = arith.mulf %t, %y : f64
    %n = arith.subf %m, %c2 : f64
    %p = arith.cmpf ogt, %n, %x : f64
    %s = arith.select %p, %n, %x : f64
    linalg.yield %s : f64
  } -> tensor<9x3xf64>
  %1 = shard.shard %0 to %rows : tensor<9x3xf64>
  %2 = shard.shard %1 to %cols annotate_for_users : tensor<9x3xf64>
  %f = tensor.empty() : tensor<9x3xf64>
  %3 = linalg.exp ins(%2 : tensor<9x3xf64>) outs(%f : tensor<9x3xf64>) -> tensor<9x3xf64>
  %4 = shard.shard %3 to %cols : tensor<9x3xf64>
  %5 = shard.shard %4 to %cols annotate_for_users : tensor<9x3xf64>
  return %5 : tensor<9x3xf64>
}
