module @jit_body attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<12x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<12x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<12x12xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<f32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}) {
    %0:2 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"x", ?}, {?}]>, <@mesh, [{?}, {?}]>] out_shardings=[<@mesh, [{"x", ?}, {?}]>, <@mesh, []>] manual_axes={"x"} (%arg2: tensor<6x12xf32>, %arg3: tensor<12x12xf32>) {
      %1 = stablehlo.sine %arg2 : tensor<6x12xf32>
      %2 = sdy.sharding_constraint %1 <@mesh, [{?}, {?}]> : tensor<6x12xf32>
      %3 = stablehlo.dot_general %2, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x12xf32>, tensor<12x12xf32>) -> tensor<6x12xf32>
      %4 = sdy.sharding_constraint %3 <@mesh, [{?}, {?}]> : tensor<6x12xf32>
      %5 = sdy.sharding_constraint %4 <@mesh, [{}, {"y"}]> : tensor<6x12xf32>
      %6 = "stablehlo.all_reduce"(%5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %12 = stablehlo.add %arg4, %arg5 : tensor<f32>
        %13 = sdy.sharding_constraint %12 <@mesh, []> : tensor<f32>
        stablehlo.return %13 : tensor<f32>
      }) : (tensor<6x12xf32>) -> tensor<6x12xf32>
      %7 = stablehlo.add %5, %6 : tensor<6x12xf32>
      %8 = sdy.sharding_constraint %7 <@mesh, [{?}, {?}]> : tensor<6x12xf32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %9 = stablehlo.reduce(%5 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<6x12xf32>, tensor<f32>) -> tensor<f32>
      %10 = sdy.sharding_constraint %9 <@mesh, []> : tensor<f32>
      %11 = "stablehlo.all_reduce"(%10) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %12 = stablehlo.add %arg4, %arg5 : tensor<f32>
        %13 = sdy.sharding_constraint %12 <@mesh, []> : tensor<f32>
        stablehlo.return %13 : tensor<f32>
      }) : (tensor<f32>) -> tensor<f32>
      sdy.return %8, %11 : tensor<6x12xf32>, tensor<f32>
    } : (tensor<12x12xf32>, tensor<12x12xf32>) -> (tensor<12x12xf32>, tensor<f32>)
    return %0#0, %0#1 : tensor<12x12xf32>, tensor<f32>
  }
}
