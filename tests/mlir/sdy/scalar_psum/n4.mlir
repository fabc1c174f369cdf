module @jit_body attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<12xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<f32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}, tensor<1xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0:3 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>, <@mesh, []>, <@mesh, [{}]>] manual_axes={"x"} (%arg1: tensor<3xf32>) {
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %2 = stablehlo.multiply %arg1, %1 : tensor<3xf32>
      %3 = stablehlo.multiply %arg1, %arg1 : tensor<3xf32>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
      %5 = "stablehlo.all_reduce"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %9 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %9 : tensor<f32>
      }) : (tensor<f32>) -> tensor<f32>
      %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %6 = stablehlo.reduce(%arg1 init: %cst_1) applies stablehlo.maximum across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
      %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<f32>) -> tensor<1xf32>
      %8 = "stablehlo.all_reduce"(%7) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %9 = stablehlo.maximum %arg2, %arg3 : tensor<f32>
        stablehlo.return %9 : tensor<f32>
      }) : (tensor<1xf32>) -> tensor<1xf32>
      sdy.return %2, %5, %8 : tensor<3xf32>, tensor<f32>, tensor<1xf32>
    } : (tensor<12xf32>) -> (tensor<12xf32>, tensor<f32>, tensor<1xf32>)
    return %0#0, %0#1, %0#2 : tensor<12xf32>, tensor<f32>, tensor<1xf32>
  }
}
