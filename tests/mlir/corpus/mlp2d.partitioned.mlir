// Generated from mlp2d.mlir by mlir-opt 22 (tests/test_mlir_cli.py regenerates and compares):
//   mlir-opt --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" mlp2d.mlir
module {
  shard.grid @grid(shape = 2x?)
  func.func @mlp2d(%arg0: tensor<4x?xf32>, %arg1: tensor<32x?xf32>, %arg2: tensor<?x32xf32>) -> tensor<4x?xf32> {
    %all_gather = shard.all_gather %arg0 on @grid grid_axes = [1] gather_axis = 1 : tensor<4x?xf32> -> tensor<4x?xf32>
    %cast = tensor.cast %all_gather : tensor<4x?xf32> to tensor<4x32xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %sharding = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
    %proc_linear_idx:2 = shard.process_multi_index on @grid : index, index
    %shard_shape:2 = shard.shard_shape dims = [8, 64] sharding = %sharding device = [%proc_linear_idx#0, %proc_linear_idx#1] : index, index
    %0 = tensor.empty(%shard_shape#1) : tensor<4x?xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x?xf32>) -> tensor<4x?xf32>
    %2 = linalg.matmul ins(%cast, %arg1 : tensor<4x32xf32>, tensor<32x?xf32>) outs(%1 : tensor<4x?xf32>) -> tensor<4x?xf32>
    %sharding_0 = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
    %proc_linear_idx_1:2 = shard.process_multi_index on @grid : index, index
    %shard_shape_2:2 = shard.shard_shape dims = [8, 64] sharding = %sharding_0 device = [%proc_linear_idx_1#0, %proc_linear_idx_1#1] : index, index
    %3 = tensor.empty(%shard_shape_2#1) : tensor<4x?xf32>
    %4 = linalg.max ins(%2, %1 : tensor<4x?xf32>, tensor<4x?xf32>) outs(%3 : tensor<4x?xf32>) -> tensor<4x?xf32>
    %5 = tensor.empty() : tensor<4x32xf32>
    %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<4x32xf32>) -> tensor<4x32xf32>
    %proc_linear_idx_3 = shard.process_multi_index on @grid axes = [1] : index
    %grid_shape = shard.grid_shape @grid axes = [1] : index
    %c0 = arith.constant 0 : index
    %7 = arith.cmpi eq, %proc_linear_idx_3, %c0 : index
    %8 = scf.if %7 -> (tensor<4x32xf32>) {
      scf.yield %6 : tensor<4x32xf32>
    } else {
      %10 = tensor.empty() : tensor<4x32xf32>
      %cst_4 = arith.constant 0.000000e+00 : f32
      %11 = linalg.fill ins(%cst_4 : f32) outs(%10 : tensor<4x32xf32>) -> tensor<4x32xf32>
      scf.yield %11 : tensor<4x32xf32>
    }
    %9 = linalg.matmul ins(%4, %arg2 : tensor<4x?xf32>, tensor<?x32xf32>) outs(%8 : tensor<4x32xf32>) -> tensor<4x32xf32>
    %all_reduce = shard.all_reduce %9 on @grid grid_axes = [1] : tensor<4x32xf32> -> tensor<4x32xf32>
    %all_slice = shard.all_slice %all_reduce on @grid grid_axes = [1] slice_axis = 1 : tensor<4x32xf32> -> tensor<4x?xf32>
    return %all_slice : tensor<4x?xf32>
  }
}

