"builtin.module"() <{sym_name = "jit_body"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}], function_type = (tensor<12x12xf32>) -> (tensor<6x6xf32>, tensor<12x12xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<12x12xf32>):
    %0:2 = "sdy.manual_computation"(%arg0) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{?}, {?}]>, <@mesh, [{"x", ?}, {?}]>]>}> ({
    ^bb0(%arg1: tensor<6x12xf32>):
      %1:2 = "sdy.manual_computation"(%arg1) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{?}, {"y", ?}]>]>, manual_axes = #sdy<manual_axes{"y"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{?}, {?}]>, <@mesh, [{?}, {"y", ?}]>]>}> ({
      ^bb0(%arg8: tensor<6x6xf32>):
        %16 = "stablehlo.multiply"(%arg8, %arg8) : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
        %17 = "stablehlo.all_reduce"(%16) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
        ^bb0(%arg9: tensor<f32>, %arg10: tensor<f32>):
          %19 = "stablehlo.add"(%arg9, %arg10) : (tensor<f32>, tensor<f32>) -> tensor<f32>
          "stablehlo.return"(%19) : (tensor<f32>) -> ()
        }) : (tensor<6x6xf32>) -> tensor<6x6xf32>
        %18 = "stablehlo.cosine"(%arg8) : (tensor<6x6xf32>) -> tensor<6x6xf32>
        "sdy.return"(%17, %18) : (tensor<6x6xf32>, tensor<6x6xf32>) -> ()
      }) : (tensor<6x12xf32>) -> (tensor<6x6xf32>, tensor<6x12xf32>)
      %2 = "stablehlo.all_reduce"(%1#0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %14 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %15 = "sdy.sharding_constraint"(%14) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%15) : (tensor<f32>) -> ()
      }) : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %3 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %4 = "stablehlo.reduce"(%1#1, %3) <{dimensions = array<i64: 0, 1>}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %13 = "stablehlo.add"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%13) : (tensor<f32>) -> ()
      }) : (tensor<6x12xf32>, tensor<f32>) -> tensor<f32>
      %5 = "sdy.sharding_constraint"(%4) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
      %6 = "stablehlo.all_reduce"(%5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %11 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %12 = "sdy.sharding_constraint"(%11) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%12) : (tensor<f32>) -> ()
      }) : (tensor<f32>) -> tensor<f32>
      %7 = "stablehlo.broadcast_in_dim"(%6) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<6x6xf32>
      %8 = "sdy.sharding_constraint"(%7) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      %9 = "stablehlo.add"(%2, %8) : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
      %10 = "sdy.sharding_constraint"(%9) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x6xf32>) -> tensor<6x6xf32>
      "sdy.return"(%10, %1#1) : (tensor<6x6xf32>, tensor<6x12xf32>) -> ()
    }) : (tensor<12x12xf32>) -> (tensor<6x6xf32>, tensor<12x12xf32>)
    "func.return"(%0#0, %0#1) : (tensor<6x6xf32>, tensor<12x12xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
