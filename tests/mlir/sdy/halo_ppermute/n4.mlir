module @jit_body attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<16xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<1xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>, <@mesh, [{}]>] manual_axes={"x"} (%arg1: tensor<4xf32>) {
      %1 = stablehlo.slice %arg1 [0:1] : (tensor<4xf32>) -> tensor<1xf32>
      %2 = "stablehlo.collective_permute"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 3], [1, 0], [2, 1], [3, 2]]> : tensor<4x2xi64>}> : (tensor<1xf32>) -> tensor<1xf32>
      %3 = stablehlo.slice %arg1 [3:4] : (tensor<4xf32>) -> tensor<1xf32>
      %4 = "stablehlo.collective_permute"(%3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<1xf32>) -> tensor<1xf32>
      %5 = stablehlo.concatenate %4, %arg1, %2, dim = 0 : (tensor<1xf32>, tensor<4xf32>, tensor<1xf32>) -> tensor<6xf32>
      %6 = stablehlo.slice %5 [0:4] : (tensor<6xf32>) -> tensor<4xf32>
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %8 = stablehlo.multiply %7, %arg1 : tensor<4xf32>
      %9 = stablehlo.subtract %6, %8 : tensor<4xf32>
      %10 = stablehlo.slice %5 [2:6] : (tensor<6xf32>) -> tensor<4xf32>
      %11 = stablehlo.add %9, %10 : tensor<4xf32>
      %cst_0 = stablehlo.constant dense<2.500000e-01> : tensor<f32>
      %12 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %13 = stablehlo.multiply %12, %11 : tensor<4xf32>
      %14 = stablehlo.add %arg1, %13 : tensor<4xf32>
      %15 = stablehlo.subtract %14, %arg1 : tensor<4xf32>
      %16 = stablehlo.abs %15 : tensor<4xf32>
      %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %17 = stablehlo.reduce(%16 init: %cst_1) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      %18 = stablehlo.broadcast_in_dim %17, dims = [] : (tensor<f32>) -> tensor<1xf32>
      %19 = "stablehlo.all_reduce"(%18) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %20 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %20 : tensor<f32>
      }) : (tensor<1xf32>) -> tensor<1xf32>
      sdy.return %14, %19 : tensor<4xf32>, tensor<1xf32>
    } : (tensor<16xf32>) -> (tensor<16xf32>, tensor<1xf32>)
    return %0#0, %0#1 : tensor<16xf32>, tensor<1xf32>
  }
}
