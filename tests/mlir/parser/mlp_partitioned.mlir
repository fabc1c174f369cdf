// mlir-opt 22 --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" of a 2-layer MLP
// (16x64 @ 64x128 @ 128x64, weights sharded on a 4-device grid): the custom form mlir-opt prints.
module {
  shard.grid @grid(shape = 4)
  func.func @mlp(%arg0: tensor<16x64xf32>, %arg1: tensor<64x32xf32>, %arg2: tensor<32x64xf32>) -> tensor<16x64xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<16x32xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%1 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %3 = tensor.empty() : tensor<16x64xf32>
    %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %proc_linear_idx = shard.process_multi_index on @grid axes = [0] : index
    %grid_shape = shard.grid_shape @grid axes = [0] : index
    %c0 = arith.constant 0 : index
    %5 = arith.cmpi eq, %proc_linear_idx, %c0 : index
    %6 = scf.if %5 -> (tensor<16x64xf32>) {
      scf.yield %4 : tensor<16x64xf32>
    } else {
      %8 = tensor.empty() : tensor<16x64xf32>
      %cst_0 = arith.constant 0.000000e+00 : f32
      %9 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<16x64xf32>) -> tensor<16x64xf32>
      scf.yield %9 : tensor<16x64xf32>
    }
    %7 = linalg.matmul ins(%2, %arg2 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%6 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %all_reduce = shard.all_reduce %7 on @grid grid_axes = [0] : tensor<16x64xf32> -> tensor<16x64xf32>
    return %all_reduce : tensor<16x64xf32>
  }
}

