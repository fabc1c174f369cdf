module @jit_body attributes {mhlo.num_partitions = 3 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1, "y"=3]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}, {name = "y", size = 3 : i64}]}}
  func.func public @main(%arg0: tensor<12x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<12x4xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<12x12xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{?}, {"y", ?}]>] out_shardings=[<@mesh, [{?}, {?}]>, <@mesh, [{?}, {"y", ?}]>] manual_axes={"y"} (%arg1: tensor<12x4xf32>) {
      %9 = stablehlo.multiply %arg1, %arg1 : tensor<12x4xf32>
      %10 = "stablehlo.all_reduce"(%9) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %12 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %12 : tensor<f32>
      }) : (tensor<12x4xf32>) -> tensor<12x4xf32>
      %11 = stablehlo.cosine %arg1 : tensor<12x4xf32>
      sdy.return %10, %11 : tensor<12x4xf32>, tensor<12x4xf32>
    } : (tensor<12x12xf32>) -> (tensor<12x4xf32>, tensor<12x12xf32>)
    %1 = "stablehlo.all_reduce"(%0#0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0], [1], [2]]> : tensor<3x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %9 = stablehlo.add %arg1, %arg2 : tensor<f32>
      %10 = sdy.sharding_constraint %9 <@mesh, []> : tensor<f32>
      stablehlo.return %10 : tensor<f32>
    }) : (tensor<12x4xf32>) -> tensor<12x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%0#1 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<12x12xf32>, tensor<f32>) -> tensor<f32>
    %3 = sdy.sharding_constraint %2 <@mesh, []> : tensor<f32>
    %4 = "stablehlo.all_reduce"(%3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0], [1], [2]]> : tensor<3x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %9 = stablehlo.add %arg1, %arg2 : tensor<f32>
      %10 = sdy.sharding_constraint %9 <@mesh, []> : tensor<f32>
      stablehlo.return %10 : tensor<f32>
    }) : (tensor<f32>) -> tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<12x4xf32>
    %6 = sdy.sharding_constraint %5 <@mesh, [{?}, {?}]> : tensor<12x4xf32>
    %7 = stablehlo.add %1, %6 : tensor<12x4xf32>
    %8 = sdy.sharding_constraint %7 <@mesh, [{?}, {?}]> : tensor<12x4xf32>
    return %8, %0#1 : tensor<12x4xf32>, tensor<12x12xf32>
  }
}
