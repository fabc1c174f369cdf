// Generated from mlp.mlir by mlir-opt 22 (tests/test_mlir_cli.py regenerates and compares):
//   mlir-opt --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" mlp.mlir
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @grid(shape = ?)
  func.func @mlp(%arg0: tensor<8x?xf64>, %arg1: tensor<32x?xf64>, %arg2: tensor<?x32xf64>) -> tensor<8x?xf64> {
    %all_gather = shard.all_gather %arg0 on @grid grid_axes = [0] gather_axis = 1 : tensor<8x?xf64> -> tensor<8x?xf64>
    %cast = tensor.cast %all_gather : tensor<8x?xf64> to tensor<8x32xf64>
    %cst = arith.constant 0.000000e+00 : f64
    %sharding = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %proc_linear_idx = shard.process_multi_index on @grid : index
    %shard_shape:2 = shard.shard_shape dims = [8, 64] sharding = %sharding device = [%proc_linear_idx] : index, index
    %0 = tensor.empty(%shard_shape#1) : tensor<8x?xf64>
    %1 = linalg.fill ins(%cst : f64) outs(%0 : tensor<8x?xf64>) -> tensor<8x?xf64>
    %2 = linalg.matmul ins(%cast, %arg1 : tensor<8x32xf64>, tensor<32x?xf64>) outs(%1 : tensor<8x?xf64>) -> tensor<8x?xf64>
    %sharding_0 = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %proc_linear_idx_1 = shard.process_multi_index on @grid : index
    %shard_shape_2:2 = shard.shard_shape dims = [8, 64] sharding = %sharding_0 device = [%proc_linear_idx_1] : index, index
    %3 = tensor.empty(%shard_shape_2#1) : tensor<8x?xf64>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<8x?xf64>) outs(%3 : tensor<8x?xf64>) {
    ^bb0(%in: f64, %out: f64):
      %10 = arith.maximumf %in, %cst : f64
      linalg.yield %10 : f64
    } -> tensor<8x?xf64>
    %5 = tensor.empty() : tensor<8x32xf64>
    %6 = linalg.fill ins(%cst : f64) outs(%5 : tensor<8x32xf64>) -> tensor<8x32xf64>
    %proc_linear_idx_3 = shard.process_multi_index on @grid axes = [0] : index
    %grid_shape = shard.grid_shape @grid axes = [0] : index
    %c0 = arith.constant 0 : index
    %7 = arith.cmpi eq, %proc_linear_idx_3, %c0 : index
    %8 = scf.if %7 -> (tensor<8x32xf64>) {
      scf.yield %6 : tensor<8x32xf64>
    } else {
      %10 = tensor.empty() : tensor<8x32xf64>
      %cst_4 = arith.constant 0.000000e+00 : f64
      %11 = linalg.fill ins(%cst_4 : f64) outs(%10 : tensor<8x32xf64>) -> tensor<8x32xf64>
      scf.yield %11 : tensor<8x32xf64>
    }
    %9 = linalg.matmul ins(%4, %arg2 : tensor<8x?xf64>, tensor<?x32xf64>) outs(%8 : tensor<8x32xf64>) -> tensor<8x32xf64>
    %all_reduce = shard.all_reduce %9 on @grid grid_axes = [0] : tensor<8x32xf64> -> tensor<8x32xf64>
    %all_slice = shard.all_slice %all_reduce on @grid grid_axes = [0] slice_axis = 1 : tensor<8x32xf64> -> tensor<8x?xf64>
    return %all_slice : tensor<8x?xf64>
  }
}

