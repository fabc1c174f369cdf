// Reductions over split and unsplit dims.  Written for meshrt; reduce_0d and
// reduce_1d follow test_reduce_0d / test_reduce_1d of LLVM's
// mlir/test/Dialect/Shard/partition.mlir.
shard.grid @grid(shape = ?)

func.func @reduce_0d(%arg0: tensor<8x6xi32>) -> tensor<i32> {
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %split annotate_for_users : tensor<8x6xi32>
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<i32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<i32>) -> tensor<i32>
  %1 = shard.shard %f to %rep : tensor<i32>
  %r = linalg.reduce ins(%0 : tensor<8x6xi32>) outs(%1 : tensor<i32>) dimensions = [0, 1]
    (%in: i32, %init: i32) {
      %s = arith.addi %in, %init : i32
      linalg.yield %s : i32
    }
  %2 = shard.shard %r to %rep : tensor<i32>
  %3 = shard.shard %2 to %rep annotate_for_users : tensor<i32>
  return %3 : tensor<i32>
}

func.func @reduce_1d(%arg0: tensor<8x6xi32>) -> tensor<8xi32> {
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %split annotate_for_users : tensor<8x6xi32>
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<8xi32>) -> tensor<8xi32>
  %1 = shard.shard %f to %split : tensor<8xi32>
  %2 = shard.shard %1 to %split annotate_for_users : tensor<8xi32>
  %r = linalg.reduce ins(%0 : tensor<8x6xi32>) outs(%2 : tensor<8xi32>) dimensions = [1]
    (%in: i32, %init: i32) {
      %s = arith.addi %in, %init : i32
      linalg.yield %s : i32
    }
  %3 = shard.shard %r to %split : tensor<8xi32>
  %4 = shard.shard %3 to %split annotate_for_users : tensor<8xi32>
  return %4 : tensor<8xi32>
}

// Row sums of a column-split matrix: a partial result, all-reduced.
func.func @row_sums(%arg0: tensor<6x12xf64>) -> tensor<6xf64> {
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %cols annotate_for_users : tensor<6x12xf64>
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<6xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<6xf64>) -> tensor<6xf64>
  %1 = shard.shard %f to %rep : tensor<6xf64>
  %r = linalg.reduce ins(%0 : tensor<6x12xf64>) outs(%1 : tensor<6xf64>) dimensions = [1]
    (%in: f64, %init: f64) {
      %s = arith.addf %in, %init : f64
      linalg.yield %s : f64
    }
  %2 = shard.shard %r to %rep : tensor<6xf64>
  %3 = shard.shard %2 to %rep annotate_for_users : tensor<6xf64>
  return %3 : tensor<6xf64>
}

// Column maxima of a row-split matrix through linalg.generic with a reduction iterator.
func.func @col_max(%arg0: tensor<12x5xf32>) -> tensor<5xf32> {
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %0 = shard.shard %arg0 to %rows annotate_for_users : tensor<12x5xf32>
  %lo = arith.constant -3.0e+38 : f32
  %e = tensor.empty() : tensor<5xf32>
  %f = linalg.fill ins(%lo : f32) outs(%e : tensor<5xf32>) -> tensor<5xf32>
  %1 = shard.shard %f to %rep : tensor<5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]} ins(%0 : tensor<12x5xf32>) outs(%1 : tensor<5xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<5xf32>
  %2 = shard.shard %r to %rep : tensor<5xf32>
  %3 = shard.shard %2 to %rep annotate_for_users : tensor<5xf32>
  return %3 : tensor<5xf32>
}
