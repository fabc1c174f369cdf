module @jit_body attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}, {name = "y", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<12x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<12x12xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<12x12xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<12x12xf32>
    %1 = "stablehlo.all_reduce"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %11 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %11 : tensor<f32>
    }) : (tensor<12x12xf32>) -> tensor<12x12xf32>
    %2 = stablehlo.cosine %arg0 : tensor<12x12xf32>
    %3 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %11 = stablehlo.add %arg1, %arg2 : tensor<f32>
      %12 = sdy.sharding_constraint %11 <@mesh, []> : tensor<f32>
      stablehlo.return %12 : tensor<f32>
    }) : (tensor<12x12xf32>) -> tensor<12x12xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<12x12xf32>, tensor<f32>) -> tensor<f32>
    %5 = sdy.sharding_constraint %4 <@mesh, []> : tensor<f32>
    %6 = "stablehlo.all_reduce"(%5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %11 = stablehlo.add %arg1, %arg2 : tensor<f32>
      %12 = sdy.sharding_constraint %11 <@mesh, []> : tensor<f32>
      stablehlo.return %12 : tensor<f32>
    }) : (tensor<f32>) -> tensor<f32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<f32>) -> tensor<12x12xf32>
    %8 = sdy.sharding_constraint %7 <@mesh, [{?}, {?}]> : tensor<12x12xf32>
    %9 = stablehlo.add %3, %8 : tensor<12x12xf32>
    %10 = sdy.sharding_constraint %9 <@mesh, [{?}, {?}]> : tensor<12x12xf32>
    return %10, %2 : tensor<12x12xf32>, tensor<12x12xf32>
  }
}
