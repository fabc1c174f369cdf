module @jit_body attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<12x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<12x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<36x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<12x6xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<12x6xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<18x12xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<12x6xf32> {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0:4 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{"x", ?}, {?}]>, <@mesh, [{?}, {?}]>, <@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, [{?}, {?}]>, <@mesh, [{"x", ?}, {?}]>, <@mesh, [{"x", ?}, {?}]>, <@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg3: tensor<6x6xf32>, %arg4: tensor<12x6xf32>, %arg5: tensor<18x6xf32>) {
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
      %2 = sdy.sharding_constraint %1 <@mesh, [{?}, {?}]> : tensor<6x6xf32>
      %3 = stablehlo.multiply %arg3, %2 : tensor<6x6xf32>
      %4 = sdy.sharding_constraint %3 <@mesh, [{?}, {?}]> : tensor<6x6xf32>
      %5 = sdy.sharding_constraint %4 <@mesh, [{}, {"y"}]> : tensor<6x6xf32>
      %6 = "stablehlo.all_gather"(%5) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> : (tensor<6x6xf32>) -> tensor<12x6xf32>
      %7 = "stablehlo.reduce_scatter"(%arg4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %18 = stablehlo.add %arg6, %arg7 : tensor<f32>
        %19 = sdy.sharding_constraint %18 <@mesh, []> : tensor<f32>
        stablehlo.return %19 : tensor<f32>
      }) : (tensor<12x6xf32>) -> tensor<6x6xf32>
      %8 = "stablehlo.all_to_all"(%arg5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, split_count = 2 : i64, split_dimension = 0 : i64}> : (tensor<18x6xf32>) -> tensor<9x12xf32>
      %9 = "stablehlo.collective_permute"(%5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %10 = stablehlo.abs %5 : tensor<6x6xf32>
      %11 = sdy.sharding_constraint %10 <@mesh, [{?}, {?}]> : tensor<6x6xf32>
      %12 = "stablehlo.all_reduce"(%11) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %18 = stablehlo.maximum %arg6, %arg7 : tensor<f32>
        %19 = sdy.sharding_constraint %18 <@mesh, []> : tensor<f32>
        stablehlo.return %19 : tensor<f32>
      }) : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %13 = "stablehlo.all_reduce"(%5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %18 = stablehlo.minimum %arg6, %arg7 : tensor<f32>
        %19 = sdy.sharding_constraint %18 <@mesh, []> : tensor<f32>
        stablehlo.return %19 : tensor<f32>
      }) : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %14 = stablehlo.add %12, %13 : tensor<6x6xf32>
      %15 = sdy.sharding_constraint %14 <@mesh, [{?}, {?}]> : tensor<6x6xf32>
      %16 = stablehlo.add %9, %15 : tensor<6x6xf32>
      %17 = sdy.sharding_constraint %16 <@mesh, [{?}, {?}]> : tensor<6x6xf32>
      sdy.return %6, %7, %8, %17 : tensor<12x6xf32>, tensor<6x6xf32>, tensor<9x12xf32>, tensor<6x6xf32>
    } : (tensor<12x6xf32>, tensor<12x6xf32>, tensor<36x6xf32>) -> (tensor<12x6xf32>, tensor<12x6xf32>, tensor<18x12xf32>, tensor<12x6xf32>)
    return %0#0, %0#1, %0#2, %0#3 : tensor<12x6xf32>, tensor<12x6xf32>, tensor<18x12xf32>, tensor<12x6xf32>
  }
}
