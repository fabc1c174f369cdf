"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}], function_type = (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>, res_attrs = [{jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg3: tensor<8x4xf32>, %arg4: tensor<4x4xf32>):
    %7 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %8 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %9:4 = "stablehlo.while"(%arg4, %8, %7, %arg3) ({
    ^bb0(%arg9: tensor<4x4xf32>, %arg10: tensor<i32>, %arg11: tensor<i32>, %arg12: tensor<8x4xf32>):
      %13 = "stablehlo.constant"() <{value = dense<5> : tensor<i32>}> : () -> tensor<i32>
      %14 = "stablehlo.compare"(%arg10, %13) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%14) : (tensor<i1>) -> ()
    }, {
    ^bb0(%arg5: tensor<4x4xf32>, %arg6: tensor<i32>, %arg7: tensor<i32>, %arg8: tensor<8x4xf32>):
      %10:2 = "func.call"(%arg5, %arg7, %arg8) <{callee = @closed_call}> : (tensor<4x4xf32>, tensor<i32>, tensor<8x4xf32>) -> (tensor<i32>, tensor<8x4xf32>)
      %11 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
      %12 = "stablehlo.add"(%arg6, %11) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%arg5, %12, %10#0, %10#1) : (tensor<4x4xf32>, tensor<i32>, tensor<i32>, tensor<8x4xf32>) -> ()
    }) : (tensor<4x4xf32>, tensor<i32>, tensor<i32>, tensor<8x4xf32>) -> (tensor<4x4xf32>, tensor<i32>, tensor<i32>, tensor<8x4xf32>)
    "func.return"(%9#3) : (tensor<8x4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<4x4xf32>, tensor<i32>, tensor<8x4xf32>) -> (tensor<i32>, tensor<8x4xf32>), res_attrs = [{}, {}], sym_name = "closed_call", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>, %arg2: tensor<8x4xf32>):
    %0 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %1 = "stablehlo.add"(%arg1, %0) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %2 = "stablehlo.dot_general"(%arg2, %arg0) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %3 = "stablehlo.tanh"(%2) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %4 = "stablehlo.convert"(%arg1) : (tensor<i32>) -> tensor<f32>
    %5 = "stablehlo.broadcast_in_dim"(%4) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<8x4xf32>
    %6 = "stablehlo.add"(%3, %5) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    "func.return"(%1, %6) : (tensor<i32>, tensor<8x4xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
