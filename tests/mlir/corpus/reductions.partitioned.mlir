// Generated from reductions.mlir by mlir-opt 22 (tests/test_mlir_cli.py regenerates and compares):
//   mlir-opt --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" reductions.mlir
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
module {
  shard.grid @grid(shape = ?)
  func.func @reduce_0d(%arg0: tensor<?x6xi32>) -> tensor<i32> {
    %c0_i32 = arith.constant 0 : i32
    %0 = tensor.empty() : tensor<i32>
    %1 = linalg.fill ins(%c0_i32 : i32) outs(%0 : tensor<i32>) -> tensor<i32>
    %proc_linear_idx = shard.process_multi_index on @grid axes = [0] : index
    %grid_shape = shard.grid_shape @grid axes = [0] : index
    %c0 = arith.constant 0 : index
    %2 = arith.cmpi eq, %proc_linear_idx, %c0 : index
    %3 = scf.if %2 -> (tensor<i32>) {
      scf.yield %1 : tensor<i32>
    } else {
      %4 = tensor.empty() : tensor<i32>
      %c0_i32_0 = arith.constant 0 : i32
      %5 = linalg.fill ins(%c0_i32_0 : i32) outs(%4 : tensor<i32>) -> tensor<i32>
      scf.yield %5 : tensor<i32>
    }
    %reduced = linalg.reduce ins(%arg0 : tensor<?x6xi32>) outs(%3 : tensor<i32>) dimensions = [0, 1] 
      (%in: i32, %init: i32) {
        %4 = arith.addi %in, %init : i32
        linalg.yield %4 : i32
      }
    %all_reduce = shard.all_reduce %reduced on @grid grid_axes = [0] : tensor<i32> -> tensor<i32>
    return %all_reduce : tensor<i32>
  }
  func.func @reduce_1d(%arg0: tensor<?x6xi32>) -> tensor<?xi32> {
    %c0_i32 = arith.constant 0 : i32
    %sharding = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %proc_linear_idx = shard.process_multi_index on @grid : index
    %shard_shape = shard.shard_shape dims = [8] sharding = %sharding device = [%proc_linear_idx] : index
    %0 = tensor.empty(%shard_shape) : tensor<?xi32>
    %1 = linalg.fill ins(%c0_i32 : i32) outs(%0 : tensor<?xi32>) -> tensor<?xi32>
    %reduced = linalg.reduce ins(%arg0 : tensor<?x6xi32>) outs(%1 : tensor<?xi32>) dimensions = [1] 
      (%in: i32, %init: i32) {
        %2 = arith.addi %in, %init : i32
        linalg.yield %2 : i32
      }
    return %reduced : tensor<?xi32>
  }
  func.func @row_sums(%arg0: tensor<6x?xf64>) -> tensor<6xf64> {
    %cst = arith.constant 0.000000e+00 : f64
    %0 = tensor.empty() : tensor<6xf64>
    %1 = linalg.fill ins(%cst : f64) outs(%0 : tensor<6xf64>) -> tensor<6xf64>
    %proc_linear_idx = shard.process_multi_index on @grid axes = [0] : index
    %grid_shape = shard.grid_shape @grid axes = [0] : index
    %c0 = arith.constant 0 : index
    %2 = arith.cmpi eq, %proc_linear_idx, %c0 : index
    %3 = scf.if %2 -> (tensor<6xf64>) {
      scf.yield %1 : tensor<6xf64>
    } else {
      %4 = tensor.empty() : tensor<6xf64>
      %cst_0 = arith.constant 0.000000e+00 : f64
      %5 = linalg.fill ins(%cst_0 : f64) outs(%4 : tensor<6xf64>) -> tensor<6xf64>
      scf.yield %5 : tensor<6xf64>
    }
    %reduced = linalg.reduce ins(%arg0 : tensor<6x?xf64>) outs(%3 : tensor<6xf64>) dimensions = [1] 
      (%in: f64, %init: f64) {
        %4 = arith.addf %in, %init : f64
        linalg.yield %4 : f64
      }
    %all_reduce = shard.all_reduce %reduced on @grid grid_axes = [0] : tensor<6xf64> -> tensor<6xf64>
    return %all_reduce : tensor<6xf64>
  }
  func.func @col_max(%arg0: tensor<?x5xf32>) -> tensor<5xf32> {
    %cst = arith.constant -3.000000e+38 : f32
    %0 = tensor.empty() : tensor<5xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<5xf32>) -> tensor<5xf32>
    %proc_linear_idx = shard.process_multi_index on @grid axes = [0] : index
    %grid_shape = shard.grid_shape @grid axes = [0] : index
    %c0 = arith.constant 0 : index
    %2 = arith.cmpi eq, %proc_linear_idx, %c0 : index
    %3 = scf.if %2 -> (tensor<5xf32>) {
      scf.yield %1 : tensor<5xf32>
    } else {
      %5 = tensor.empty() : tensor<5xf32>
      %cst_0 = arith.constant 0xFF800000 : f32
      %6 = linalg.fill ins(%cst_0 : f32) outs(%5 : tensor<5xf32>) -> tensor<5xf32>
      scf.yield %6 : tensor<5xf32>
    }
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "parallel"]} ins(%arg0 : tensor<?x5xf32>) outs(%3 : tensor<5xf32>) {
    ^bb0(%in: f32, %out: f32):
      %5 = arith.maximumf %in, %out : f32
      linalg.yield %5 : f32
    } -> tensor<5xf32>
    %all_reduce = shard.all_reduce %4 on @grid grid_axes = [0] reduction =  max : tensor<5xf32> -> tensor<5xf32>
    return %all_reduce : tensor<5xf32>
  }
}

