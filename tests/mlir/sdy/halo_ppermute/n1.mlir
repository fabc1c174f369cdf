module @jit_body attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<16xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<1xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = stablehlo.slice %arg0 [0:1] : (tensor<16xf32>) -> tensor<1xf32>
    %1 = "stablehlo.collective_permute"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<0> : tensor<1x2xi64>}> : (tensor<1xf32>) -> tensor<1xf32>
    %2 = stablehlo.slice %arg0 [15:16] : (tensor<16xf32>) -> tensor<1xf32>
    %3 = "stablehlo.collective_permute"(%2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<0> : tensor<1x2xi64>}> : (tensor<1xf32>) -> tensor<1xf32>
    %4 = stablehlo.concatenate %3, %arg0, %1, dim = 0 : (tensor<1xf32>, tensor<16xf32>, tensor<1xf32>) -> tensor<18xf32>
    %5 = stablehlo.slice %4 [0:16] : (tensor<18xf32>) -> tensor<16xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %7 = stablehlo.multiply %6, %arg0 : tensor<16xf32>
    %8 = stablehlo.subtract %5, %7 : tensor<16xf32>
    %9 = stablehlo.slice %4 [2:18] : (tensor<18xf32>) -> tensor<16xf32>
    %10 = stablehlo.add %8, %9 : tensor<16xf32>
    %cst_0 = stablehlo.constant dense<2.500000e-01> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %12 = stablehlo.multiply %11, %10 : tensor<16xf32>
    %13 = stablehlo.add %arg0, %12 : tensor<16xf32>
    %14 = stablehlo.subtract %13, %arg0 : tensor<16xf32>
    %15 = stablehlo.abs %14 : tensor<16xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.reduce(%15 init: %cst_1) applies stablehlo.add across dimensions = [0] : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %18 = "stablehlo.all_reduce"(%17) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %19 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %19 : tensor<f32>
    }) : (tensor<1xf32>) -> tensor<1xf32>
    return %13, %18 : tensor<16xf32>, tensor<1xf32>
  }
}
