module @jit_body attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<12xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<f32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}, tensor<1xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<12xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<12xf32>
    %2 = stablehlo.multiply %arg0, %arg0 : tensor<12xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<12xf32>, tensor<f32>) -> tensor<f32>
    %4 = "stablehlo.all_reduce"(%3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %8 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %8 : tensor<f32>
    }) : (tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %5 = stablehlo.reduce(%arg0 init: %cst_1) applies stablehlo.maximum across dimensions = [0] : (tensor<12xf32>, tensor<f32>) -> tensor<f32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %7 = "stablehlo.all_reduce"(%6) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %8 = stablehlo.maximum %arg1, %arg2 : tensor<f32>
      stablehlo.return %8 : tensor<f32>
    }) : (tensor<1xf32>) -> tensor<1xf32>
    return %1, %4, %7 : tensor<12xf32>, tensor<f32>, tensor<1xf32>
  }
}
