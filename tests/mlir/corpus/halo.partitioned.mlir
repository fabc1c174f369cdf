// Generated from halo.mlir by mlir-opt 22 (tests/test_mlir_cli.py regenerates and compares):
//   mlir-opt --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" halo.mlir
module {
  shard.grid @grid(shape = 4)
  shard.grid @grid2(shape = 2)
  shard.grid @grid2d(shape = 2x2)
  func.func @update_halo_1d(%arg0: tensor<4x12xi64>) -> tensor<8x12xi64> {
    %0 = tensor.empty() : tensor<8x12xi64>
    %extracted_slice = tensor.extract_slice %arg0[0, 0] [4, 12] [1, 1] : tensor<4x12xi64> to tensor<4x12xi64>
    %inserted_slice = tensor.insert_slice %extracted_slice into %0[2, 0] [4, 12] [1, 1] : tensor<4x12xi64> into tensor<8x12xi64>
    %1 = shard.update_halo %inserted_slice on @grid split_axes = [[0]] halo_sizes = [2, 2] : tensor<8x12xi64>
    return %1 : tensor<8x12xi64>
  }
  func.func @update_halo_1d_grid2(%arg0: tensor<8x12xi64>) -> tensor<12x12xi64> {
    %0 = tensor.empty() : tensor<12x12xi64>
    %extracted_slice = tensor.extract_slice %arg0[0, 0] [8, 12] [1, 1] : tensor<8x12xi64> to tensor<8x12xi64>
    %inserted_slice = tensor.insert_slice %extracted_slice into %0[2, 0] [8, 12] [1, 1] : tensor<8x12xi64> into tensor<12x12xi64>
    %1 = shard.update_halo %inserted_slice on @grid2 split_axes = [[0]] halo_sizes = [2, 2] : tensor<12x12xi64>
    return %1 : tensor<12x12xi64>
  }
  func.func @update_halo_2d(%arg0: tensor<4x6xi64>) -> tensor<7x8xi64> {
    %0 = tensor.empty() : tensor<7x8xi64>
    %extracted_slice = tensor.extract_slice %arg0[0, 0] [4, 6] [1, 1] : tensor<4x6xi64> to tensor<4x6xi64>
    %inserted_slice = tensor.insert_slice %extracted_slice into %0[1, 1] [4, 6] [1, 1] : tensor<4x6xi64> into tensor<7x8xi64>
    %1 = shard.update_halo %inserted_slice on @grid2d split_axes = [[0], [1]] halo_sizes = [1, 2, 1, 1] : tensor<7x8xi64>
    return %1 : tensor<7x8xi64>
  }
}

