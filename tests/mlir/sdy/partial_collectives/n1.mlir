module @jit_body attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}, {name = "y", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<12x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<12x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<36x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<12x6xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<12x6xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<36x6xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<12x6xf32> {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<12x6xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{?}, {?}]> : tensor<12x6xf32>
    %2 = stablehlo.multiply %arg0, %1 : tensor<12x6xf32>
    %3 = sdy.sharding_constraint %2 <@mesh, [{?}, {?}]> : tensor<12x6xf32>
    %4 = sdy.sharding_constraint %3 <@mesh, [{}, {"y"}]> : tensor<12x6xf32>
    %5 = "stablehlo.all_gather"(%4) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> : (tensor<12x6xf32>) -> tensor<12x6xf32>
    %6 = "stablehlo.reduce_scatter"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %16 = stablehlo.add %arg3, %arg4 : tensor<f32>
      %17 = sdy.sharding_constraint %16 <@mesh, []> : tensor<f32>
      stablehlo.return %17 : tensor<f32>
    }) : (tensor<12x6xf32>) -> tensor<12x6xf32>
    %7 = "stablehlo.collective_permute"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<0> : tensor<1x2xi64>}> : (tensor<12x6xf32>) -> tensor<12x6xf32>
    %8 = stablehlo.abs %4 : tensor<12x6xf32>
    %9 = sdy.sharding_constraint %8 <@mesh, [{?}, {?}]> : tensor<12x6xf32>
    %10 = "stablehlo.all_reduce"(%9) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %16 = stablehlo.maximum %arg3, %arg4 : tensor<f32>
      %17 = sdy.sharding_constraint %16 <@mesh, []> : tensor<f32>
      stablehlo.return %17 : tensor<f32>
    }) : (tensor<12x6xf32>) -> tensor<12x6xf32>
    %11 = "stablehlo.all_reduce"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %16 = stablehlo.minimum %arg3, %arg4 : tensor<f32>
      %17 = sdy.sharding_constraint %16 <@mesh, []> : tensor<f32>
      stablehlo.return %17 : tensor<f32>
    }) : (tensor<12x6xf32>) -> tensor<12x6xf32>
    %12 = stablehlo.add %10, %11 : tensor<12x6xf32>
    %13 = sdy.sharding_constraint %12 <@mesh, [{?}, {?}]> : tensor<12x6xf32>
    %14 = stablehlo.add %7, %13 : tensor<12x6xf32>
    %15 = sdy.sharding_constraint %14 <@mesh, [{?}, {?}]> : tensor<12x6xf32>
    return %5, %6, %arg2, %15 : tensor<12x6xf32>, tensor<12x6xf32>, tensor<36x6xf32>, tensor<12x6xf32>
  }
}
