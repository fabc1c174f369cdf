"builtin.module"() <{sym_name = "jit_body"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}], function_type = (tensor<16xf32>) -> (tensor<16xf32>, tensor<1xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<16xf32>):
    %0:2 = "sdy.manual_computation"(%arg0) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>, <@mesh, [{}]>]>}> ({
    ^bb0(%arg1: tensor<4xf32>):
      %1 = "stablehlo.slice"(%arg1) <{limit_indices = array<i64: 1>, start_indices = array<i64: 0>, strides = array<i64: 1>}> : (tensor<4xf32>) -> tensor<1xf32>
      %2 = "stablehlo.collective_permute"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 3], [1, 0], [2, 1], [3, 2]]> : tensor<4x2xi64>}> : (tensor<1xf32>) -> tensor<1xf32>
      %3 = "stablehlo.slice"(%arg1) <{limit_indices = array<i64: 4>, start_indices = array<i64: 3>, strides = array<i64: 1>}> : (tensor<4xf32>) -> tensor<1xf32>
      %4 = "stablehlo.collective_permute"(%3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<1xf32>) -> tensor<1xf32>
      %5 = "stablehlo.concatenate"(%4, %arg1, %2) <{dimension = 0 : i64}> : (tensor<1xf32>, tensor<4xf32>, tensor<1xf32>) -> tensor<6xf32>
      %6 = "stablehlo.slice"(%5) <{limit_indices = array<i64: 4>, start_indices = array<i64: 0>, strides = array<i64: 1>}> : (tensor<6xf32>) -> tensor<4xf32>
      %7 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %8 = "stablehlo.broadcast_in_dim"(%7) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4xf32>
      %9 = "stablehlo.multiply"(%8, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %10 = "stablehlo.subtract"(%6, %9) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %11 = "stablehlo.slice"(%5) <{limit_indices = array<i64: 6>, start_indices = array<i64: 2>, strides = array<i64: 1>}> : (tensor<6xf32>) -> tensor<4xf32>
      %12 = "stablehlo.add"(%10, %11) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %13 = "stablehlo.constant"() <{value = dense<2.500000e-01> : tensor<f32>}> : () -> tensor<f32>
      %14 = "stablehlo.broadcast_in_dim"(%13) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4xf32>
      %15 = "stablehlo.multiply"(%14, %12) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %16 = "stablehlo.add"(%arg1, %15) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %17 = "stablehlo.subtract"(%16, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %18 = "stablehlo.abs"(%17) : (tensor<4xf32>) -> tensor<4xf32>
      %19 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %20 = "stablehlo.reduce"(%18, %19) <{dimensions = array<i64: 0>}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %24 = "stablehlo.add"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%24) : (tensor<f32>) -> ()
      }) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      %21 = "stablehlo.broadcast_in_dim"(%20) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<1xf32>
      %22 = "stablehlo.all_reduce"(%21) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %23 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%23) : (tensor<f32>) -> ()
      }) : (tensor<1xf32>) -> tensor<1xf32>
      "sdy.return"(%16, %22) : (tensor<4xf32>, tensor<1xf32>) -> ()
    }) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<1xf32>)
    "func.return"(%0#0, %0#1) : (tensor<16xf32>, tensor<1xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
