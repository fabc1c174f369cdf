"builtin.module"() <{sym_name = "jit_body"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}], function_type = (tensor<12x12xf32>, tensor<12x12xf32>) -> (tensor<12x12xf32>, tensor<f32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<12x12xf32>, %arg1: tensor<12x12xf32>):
    %0:2 = "sdy.manual_computation"(%arg0, %arg1) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>, <@mesh, [{?}, {?}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>, <@mesh, []>]>}> ({
    ^bb0(%arg2: tensor<6x12xf32>, %arg3: tensor<12x12xf32>):
      %1 = "stablehlo.sine"(%arg2) : (tensor<6x12xf32>) -> tensor<6x12xf32>
      %2 = "sdy.sharding_constraint"(%1) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x12xf32>) -> tensor<6x12xf32>
      %3 = "stablehlo.dot_general"(%2, %arg3) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<6x12xf32>, tensor<12x12xf32>) -> tensor<6x12xf32>
      %4 = "sdy.sharding_constraint"(%3) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x12xf32>) -> tensor<6x12xf32>
      %5 = "sdy.sharding_constraint"(%4) <{sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}> : (tensor<6x12xf32>) -> tensor<6x12xf32>
      %6 = "stablehlo.all_reduce"(%5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg8: tensor<f32>, %arg9: tensor<f32>):
        %16 = "stablehlo.add"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %17 = "sdy.sharding_constraint"(%16) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%17) : (tensor<f32>) -> ()
      }) : (tensor<6x12xf32>) -> tensor<6x12xf32>
      %7 = "stablehlo.add"(%5, %6) : (tensor<6x12xf32>, tensor<6x12xf32>) -> tensor<6x12xf32>
      %8 = "sdy.sharding_constraint"(%7) <{sharding = #sdy.sharding<@mesh, [{?}, {?}]>}> : (tensor<6x12xf32>) -> tensor<6x12xf32>
      %9 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %10 = "stablehlo.reduce"(%5, %9) <{dimensions = array<i64: 0, 1>}> ({
      ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
        %15 = "stablehlo.add"(%arg6, %arg7) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%15) : (tensor<f32>) -> ()
      }) : (tensor<6x12xf32>, tensor<f32>) -> tensor<f32>
      %11 = "sdy.sharding_constraint"(%10) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
      %12 = "stablehlo.all_reduce"(%11) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %13 = "stablehlo.add"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %14 = "sdy.sharding_constraint"(%13) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%14) : (tensor<f32>) -> ()
      }) : (tensor<f32>) -> tensor<f32>
      "sdy.return"(%8, %12) : (tensor<6x12xf32>, tensor<f32>) -> ()
    }) : (tensor<12x12xf32>, tensor<12x12xf32>) -> (tensor<12x12xf32>, tensor<f32>)
    "func.return"(%0#0, %0#1) : (tensor<12x12xf32>, tensor<f32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
