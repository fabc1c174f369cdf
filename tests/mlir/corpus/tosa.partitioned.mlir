// Generated from tosa.mlir by mlir-opt 22 (tests/test_mlir_cli.py regenerates and compares):
//   mlir-opt --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" tosa.mlir
#map = affine_map<()[s0, s1, s2] -> (s0 * s1 + s2)>
module {
  shard.grid @grid(shape = ?)
  shard.grid @g22(shape = 2x2)
  func.func @matmul_k_split(%arg0: tensor<4x2xf32>, %arg1: tensor<2x6xf32>) -> tensor<4x6xf32> {
    %0 = tensor.empty() : tensor<4x6xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x6xf32>) -> tensor<4x6xf32>
    %proc_linear_idx:2 = shard.process_multi_index on @g22 axes = [0, 1] : index, index
    %grid_shape:2 = shard.grid_shape @g22 axes = [0, 1] : index, index
    %2 = affine.apply #map()[%proc_linear_idx#0, %grid_shape#1, %proc_linear_idx#1]
    %c0 = arith.constant 0 : index
    %3 = arith.cmpi eq, %2, %c0 : index
    %4 = scf.if %3 -> (tensor<4x6xf32>) {
      scf.yield %1 : tensor<4x6xf32>
    } else {
      %6 = tensor.empty() : tensor<4x6xf32>
      %cst_0 = arith.constant 0.000000e+00 : f32
      %7 = linalg.fill ins(%cst_0 : f32) outs(%6 : tensor<4x6xf32>) -> tensor<4x6xf32>
      scf.yield %7 : tensor<4x6xf32>
    }
    %5 = linalg.matmul ins(%arg0, %arg1 : tensor<4x2xf32>, tensor<2x6xf32>) outs(%4 : tensor<4x6xf32>) -> tensor<4x6xf32>
    %all_reduce = shard.all_reduce %5 on @g22 grid_axes = [0, 1] : tensor<4x6xf32> -> tensor<4x6xf32>
    return %all_reduce : tensor<4x6xf32>
  }
  func.func @tosa_chain(%arg0: tensor<?x8xf32>, %arg1: tensor<?x8xf32>, %arg2: tensor<1xf32>) -> tensor<12x?xf32> {
    %0 = tosa.sigmoid %arg0 : (tensor<?x8xf32>) -> tensor<?x8xf32>
    %1 = tosa.tanh %arg1 : (tensor<?x8xf32>) -> tensor<?x8xf32>
    %2 = tosa.add %0, %1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    %3 = tosa.abs %2 : (tensor<?x8xf32>) -> tensor<?x8xf32>
    %all_to_all = shard.all_to_all %3 on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<?x8xf32> -> tensor<?x?xf32>
    %cast = tensor.cast %all_to_all : tensor<?x?xf32> to tensor<12x?xf32>
    %4 = tosa.exp %cast : (tensor<12x?xf32>) -> tensor<12x?xf32>
    %5 = tosa.log %4 : (tensor<12x?xf32>) -> tensor<12x?xf32>
    %6 = tosa.negate %5, %arg2, %arg2 : (tensor<12x?xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<12x?xf32>
    %7 = tosa.clamp %6 {max_val = 0.000000e+00 : f32, min_val = -1.500000e+00 : f32} : (tensor<12x?xf32>) -> tensor<12x?xf32>
    %8 = tosa.maximum %7, %5 : (tensor<12x?xf32>, tensor<12x?xf32>) -> tensor<12x?xf32>
    %9 = tosa.sub %8, %7 : (tensor<12x?xf32>, tensor<12x?xf32>) -> tensor<12x?xf32>
    %10 = tosa.minimum %9, %8 : (tensor<12x?xf32>, tensor<12x?xf32>) -> tensor<12x?xf32>
    return %10 : tensor<12x?xf32>
  }
}

