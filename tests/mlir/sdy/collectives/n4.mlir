module @jit_body attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<8x4xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<8x4xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<4x8xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0:3 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{}, {}]>, <@mesh, [{}, {"x"}]>] out_shardings=[<@mesh, [{}, {}]>, <@mesh, [{"x"}, {}]>, <@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg3: tensor<2x4xf32>, %arg4: tensor<8x4xf32>, %arg5: tensor<4x2xf32>) {
      %1 = "stablehlo.all_gather"(%arg3) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<2x4xf32>) -> tensor<8x4xf32>
      %2 = "stablehlo.reduce_scatter"(%arg4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %4 = stablehlo.add %arg6, %arg7 : tensor<f32>
        stablehlo.return %4 : tensor<f32>
      }) : (tensor<8x4xf32>) -> tensor<2x4xf32>
      %3 = "stablehlo.all_to_all"(%arg5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, split_count = 4 : i64, split_dimension = 0 : i64}> : (tensor<4x2xf32>) -> tensor<1x8xf32>
      sdy.return %1, %2, %3 : tensor<8x4xf32>, tensor<2x4xf32>, tensor<1x8xf32>
    } : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>)
    return %0#0, %0#1, %0#2 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>
  }
}
