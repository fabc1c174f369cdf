"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}], function_type = (tensor<12x6xf32>, tensor<6x6xf32>) -> (tensor<12x6xf32>, tensor<12xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<12x6xf32>, %arg1: tensor<6x6xf32>):
    %0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %1:3 = "stablehlo.while"(%arg1, %0, %arg0) ({
    ^bb0(%arg9: tensor<6x6xf32>, %arg10: tensor<i32>, %arg11: tensor<12x6xf32>):
      %22 = "stablehlo.constant"() <{value = dense<4> : tensor<i32>}> : () -> tensor<i32>
      %23 = "stablehlo.compare"(%arg10, %22) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %24 = "stablehlo.multiply"(%arg11, %arg11) : (tensor<12x6xf32>, tensor<12x6xf32>) -> tensor<12x6xf32>
      %25 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %26 = "stablehlo.reduce"(%24, %25) <{dimensions = array<i64: 0, 1>}> ({
      ^bb0(%arg12: tensor<f32>, %arg13: tensor<f32>):
        %34 = "stablehlo.add"(%arg12, %arg13) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%34) : (tensor<f32>) -> ()
      }) : (tensor<12x6xf32>, tensor<f32>) -> tensor<f32>
      %27 = "stablehlo.constant"() <{value = dense<1.000000e+06> : tensor<f32>}> : () -> tensor<f32>
      %28 = "stablehlo.compare"(%26, %27) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %29 = "stablehlo.constant"() <{value = dense<false> : tensor<i1>}> : () -> tensor<i1>
      %30 = "stablehlo.broadcast_in_dim"(%29) <{broadcast_dimensions = array<i64>}> : (tensor<i1>) -> tensor<i1>
      %31 = "stablehlo.compare"(%23, %30) <{compare_type = #stablehlo<comparison_type UNSIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %32 = "stablehlo.convert"(%31) : (tensor<i1>) -> tensor<i1>
      %33 = "stablehlo.and"(%32, %28) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%33) : (tensor<i1>) -> ()
    }, {
    ^bb0(%arg6: tensor<6x6xf32>, %arg7: tensor<i32>, %arg8: tensor<12x6xf32>):
      %17 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
      %18 = "stablehlo.add"(%arg7, %17) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %19 = "stablehlo.dot_general"(%arg8, %arg6) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<12x6xf32>, tensor<6x6xf32>) -> tensor<12x6xf32>
      %20 = "stablehlo.tanh"(%19) : (tensor<12x6xf32>) -> tensor<12x6xf32>
      %21 = "stablehlo.add"(%20, %arg8) : (tensor<12x6xf32>, tensor<12x6xf32>) -> tensor<12x6xf32>
      "stablehlo.return"(%arg6, %18, %21) : (tensor<6x6xf32>, tensor<i32>, tensor<12x6xf32>) -> ()
    }) : (tensor<6x6xf32>, tensor<i32>, tensor<12x6xf32>) -> (tensor<6x6xf32>, tensor<i32>, tensor<12x6xf32>)
    %2 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %3 = "stablehlo.reduce"(%1#2, %2) <{dimensions = array<i64: 0, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %16 = "stablehlo.add"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%16) : (tensor<f32>) -> ()
    }) : (tensor<12x6xf32>, tensor<f32>) -> tensor<f32>
    %4 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %5 = "stablehlo.compare"(%3, %4) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %6 = "stablehlo.convert"(%5) : (tensor<i1>) -> tensor<i32>
    %7 = "stablehlo.case"(%6) ({
      %14 = "stablehlo.negate"(%1#2) : (tensor<12x6xf32>) -> tensor<12x6xf32>
      %15 = "stablehlo.exponential"(%14) : (tensor<12x6xf32>) -> tensor<12x6xf32>
      "stablehlo.return"(%15) : (tensor<12x6xf32>) -> ()
    }, {
      %11 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %12 = "stablehlo.broadcast_in_dim"(%11) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<12x6xf32>
      %13 = "stablehlo.multiply"(%1#2, %12) : (tensor<12x6xf32>, tensor<12x6xf32>) -> tensor<12x6xf32>
      "stablehlo.return"(%13) : (tensor<12x6xf32>) -> ()
    }) : (tensor<i32>) -> tensor<12x6xf32>
    %8 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %9 = "stablehlo.reduce"(%7, %8) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %10 = "stablehlo.maximum"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%10) : (tensor<f32>) -> ()
    }) : (tensor<12x6xf32>, tensor<f32>) -> tensor<12xf32>
    "func.return"(%7, %9) : (tensor<12x6xf32>, tensor<12xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
