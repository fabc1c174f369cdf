"builtin.module"() <{sym_name = "jit_body"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], function_type = (tensor<12x6xf32>, tensor<12x6xf32>, tensor<36x6xf32>) -> (tensor<12x6xf32>, tensor<12x6xf32>, tensor<18x12xf32>, tensor<12x6xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<12x6xf32>, %arg1: tensor<12x6xf32>, %arg2: tensor<36x6xf32>):
    %0:4 = "sdy.manual_computation"(%arg0, %arg1, %arg2) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>, <@mesh, [{?}, {?}]>, <@mesh, [{"x", ?}, {?}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{?}, {?}]>, <@mesh, [{"x", ?}, {?}]>, <@mesh, [{"x", ?}, {?}]>, <@mesh, [{"x", ?}, {?}]>]>}> ({
    ^bb0(%arg3: tensor<6x6xf32>, %arg4: tensor<12x6xf32>, %arg5: tensor<18x6xf32>):
      %1 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<6x6xf32>
      %3 = "sdy.sharding_constraint"(%2) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %4 = "stablehlo.multiply"(%arg3, %3) : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
      %5 = "sdy.sharding_constraint"(%4) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %6 = "sdy.sharding_constraint"(%5) <{sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %7 = "stablehlo.all_gather"(%6) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> : (tensor<6x6xf32>) -> tensor<12x6xf32>
      %8 = "stablehlo.reduce_scatter"(%arg4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
      ^bb0(%arg10: tensor<f32>, %arg11: tensor<f32>):
        %23 = "stablehlo.add"(%arg10, %arg11) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %24 = "sdy.sharding_constraint"(%23) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%24) : (tensor<f32>) -> ()
      }) : (tensor<12x6xf32>) -> tensor<6x6xf32>
      %9 = "stablehlo.all_to_all"(%arg5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, split_count = 2 : i64, split_dimension = 0 : i64}> : (tensor<18x6xf32>) -> tensor<9x12xf32>
      %10 = "stablehlo.collective_permute"(%6) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 2], [2, 0], [1, 3], [3, 1]]> : tensor<4x2xi64>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %11 = "stablehlo.abs"(%6) : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %12 = "sdy.sharding_constraint"(%11) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %13 = "stablehlo.all_reduce"(%12) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg8: tensor<f32>, %arg9: tensor<f32>):
        %21 = "stablehlo.maximum"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %22 = "sdy.sharding_constraint"(%21) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%22) : (tensor<f32>) -> ()
      }) : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %14 = "stablehlo.all_reduce"(%6) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %19 = "stablehlo.minimum"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %20 = "sdy.sharding_constraint"(%19) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%20) : (tensor<f32>) -> ()
      }) : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %15 = "stablehlo.add"(%13, %14) : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
      %16 = "sdy.sharding_constraint"(%15) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %17 = "stablehlo.add"(%10, %16) : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
      %18 = "sdy.sharding_constraint"(%17) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      "sdy.return"(%7, %8, %9, %18) : (tensor<12x6xf32>, tensor<6x6xf32>, tensor<9x12xf32>, tensor<6x6xf32>) -> ()
    }) : (tensor<12x6xf32>, tensor<12x6xf32>, tensor<36x6xf32>) -> (tensor<12x6xf32>, tensor<12x6xf32>, tensor<18x12xf32>, tensor<12x6xf32>)
    "func.return"(%0#0, %0#1, %0#2, %0#3) : (tensor<12x6xf32>, tensor<12x6xf32>, tensor<18x12xf32>, tensor<12x6xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
