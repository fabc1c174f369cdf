"builtin.module"() <{sym_name = "jit_body"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}], function_type = (tensor<12xf32>) -> (tensor<12xf32>, tensor<f32>, tensor<1xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}, {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<12xf32>):
    %0:3 = "sdy.manual_computation"(%arg0) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>, <@mesh, []>, <@mesh, [{}]>]>}> ({
    ^bb0(%arg1: tensor<3xf32>):
      %1 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<3xf32>
      %3 = "stablehlo.multiply"(%arg1, %2) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %4 = "stablehlo.multiply"(%arg1, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %5 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %6 = "stablehlo.reduce"(%4, %5) <{dimensions = array<i64: 0>}> ({
      ^bb0(%arg8: tensor<f32>, %arg9: tensor<f32>):
        %15 = "stablehlo.add"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%15) : (tensor<f32>) -> ()
      }) : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
      %7 = "stablehlo.all_reduce"(%6) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %14 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%14) : (tensor<f32>) -> ()
      }) : (tensor<f32>) -> tensor<f32>
      %8 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
      %9 = "stablehlo.reduce"(%arg1, %8) <{dimensions = array<i64: 0>}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %13 = "stablehlo.maximum"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%13) : (tensor<f32>) -> ()
      }) : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
      %10 = "stablehlo.broadcast_in_dim"(%9) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<1xf32>
      %11 = "stablehlo.all_reduce"(%10) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %12 = "stablehlo.maximum"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%12) : (tensor<f32>) -> ()
      }) : (tensor<1xf32>) -> tensor<1xf32>
      "sdy.return"(%3, %7, %11) : (tensor<3xf32>, tensor<f32>, tensor<1xf32>) -> ()
    }) : (tensor<12xf32>) -> (tensor<12xf32>, tensor<f32>, tensor<1xf32>)
    "func.return"(%0#0, %0#1, %0#2) : (tensor<12xf32>, tensor<f32>, tensor<1xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
