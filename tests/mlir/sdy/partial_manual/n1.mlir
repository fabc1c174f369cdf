module @jit_body attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=1, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 1 : i64}, {name = "y", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<12x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<12x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<12x12xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<f32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}) {
    %0 = stablehlo.sine %arg0 : tensor<12x12xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{?}, {?}]> : tensor<12x12xf32>
    %2 = stablehlo.dot_general %1, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<12x12xf32>, tensor<12x12xf32>) -> tensor<12x12xf32>
    %3 = sdy.sharding_constraint %2 <@mesh, [{?}, {?}]> : tensor<12x12xf32>
    %4 = sdy.sharding_constraint %3 <@mesh, [{}, {"y"}]> : tensor<12x12xf32>
    %5 = "stablehlo.all_reduce"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %11 = stablehlo.add %arg2, %arg3 : tensor<f32>
      %12 = sdy.sharding_constraint %11 <@mesh, []> : tensor<f32>
      stablehlo.return %12 : tensor<f32>
    }) : (tensor<12x12xf32>) -> tensor<12x12xf32>
    %6 = stablehlo.add %4, %5 : tensor<12x12xf32>
    %7 = sdy.sharding_constraint %6 <@mesh, [{?}, {?}]> : tensor<12x12xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.reduce(%4 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<12x12xf32>, tensor<f32>) -> tensor<f32>
    %9 = sdy.sharding_constraint %8 <@mesh, []> : tensor<f32>
    %10 = "stablehlo.all_reduce"(%9) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %11 = stablehlo.add %arg2, %arg3 : tensor<f32>
      %12 = sdy.sharding_constraint %11 <@mesh, []> : tensor<f32>
      stablehlo.return %12 : tensor<f32>
    }) : (tensor<f32>) -> tensor<f32>
    return %7, %10 : tensor<12x12xf32>, tensor<f32>
  }
}
