module @jit_body attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<12x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<6x6xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<12x12xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, [{?}, {?}]>, <@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg1: tensor<6x12xf32>) {
      %1:2 = sdy.manual_computation(%arg1) in_shardings=[<@mesh, [{?}, {"y", ?}]>] out_shardings=[<@mesh, [{?}, {?}]>, <@mesh, [{?}, {"y", ?}]>] manual_axes={"y"} (%arg2: tensor<6x6xf32>) {
        %10 = stablehlo.multiply %arg2, %arg2 : tensor<6x6xf32>
        %11 = "stablehlo.all_reduce"(%10) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
        ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
          %13 = stablehlo.add %arg3, %arg4 : tensor<f32>
          stablehlo.return %13 : tensor<f32>
        }) : (tensor<6x6xf32>) -> tensor<6x6xf32>
        %12 = stablehlo.cosine %arg2 : tensor<6x6xf32>
        sdy.return %11, %12 : tensor<6x6xf32>, tensor<6x6xf32>
      } : (tensor<6x12xf32>) -> (tensor<6x6xf32>, tensor<6x12xf32>)
      %2 = "stablehlo.all_reduce"(%1#0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %10 = stablehlo.add %arg2, %arg3 : tensor<f32>
        %11 = sdy.sharding_constraint %10 <@mesh, []> : tensor<f32>
        stablehlo.return %11 : tensor<f32>
      }) : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %3 = stablehlo.reduce(%1#1 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<6x12xf32>, tensor<f32>) -> tensor<f32>
      %4 = sdy.sharding_constraint %3 <@mesh, []> : tensor<f32>
      %5 = "stablehlo.all_reduce"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %10 = stablehlo.add %arg2, %arg3 : tensor<f32>
        %11 = sdy.sharding_constraint %10 <@mesh, []> : tensor<f32>
        stablehlo.return %11 : tensor<f32>
      }) : (tensor<f32>) -> tensor<f32>
      %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
      %7 = sdy.sharding_constraint %6 <@mesh, [{?}, {?}]> : tensor<6x6xf32>
      %8 = stablehlo.add %2, %7 : tensor<6x6xf32>
      %9 = sdy.sharding_constraint %8 <@mesh, [{?}, {?}]> : tensor<6x6xf32>
      sdy.return %9, %1#1 : tensor<6x6xf32>, tensor<6x12xf32>
    } : (tensor<12x12xf32>) -> (tensor<6x6xf32>, tensor<12x12xf32>)
    return %0#0, %0#1 : tensor<6x6xf32>, tensor<12x12xf32>
  }
}
