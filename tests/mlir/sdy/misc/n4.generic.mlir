"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, []>}, {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}], function_type = (tensor<8x4xf32>, tensor<i32>, tensor<4x8xi32>) -> (tensor<3x2xf32>, tensor<8x4xf32>, tensor<11x5xf32>, tensor<8x4xf32>, tensor<4x8xi32>, tensor<4x8xi32>, tensor<4x4xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[4]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, {jax.result_info = "result[5]", sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, {jax.result_info = "result[6]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg8: tensor<8x4xf32>, %arg9: tensor<i32>, %arg10: tensor<4x8xi32>):
    %25 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %26 = "stablehlo.compare"(%arg9, %25) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %27 = "stablehlo.constant"() <{value = dense<8> : tensor<i32>}> : () -> tensor<i32>
    %28 = "stablehlo.add"(%arg9, %27) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %29 = "stablehlo.select"(%26, %28, %arg9) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %30 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %31 = "stablehlo.dynamic_slice"(%arg8, %29, %30) <{slice_sizes = array<i64: 3, 2>}> : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<3x2xf32>
    %32 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %33 = "stablehlo.broadcast_in_dim"(%32) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x2xf32>
    %34 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %35 = "stablehlo.compare"(%arg9, %34) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %36 = "stablehlo.constant"() <{value = dense<8> : tensor<i32>}> : () -> tensor<i32>
    %37 = "stablehlo.add"(%arg9, %36) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %38 = "stablehlo.select"(%35, %37, %arg9) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %39 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %40 = "stablehlo.compare"(%arg9, %39) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %41 = "stablehlo.constant"() <{value = dense<4> : tensor<i32>}> : () -> tensor<i32>
    %42 = "stablehlo.add"(%arg9, %41) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %43 = "stablehlo.select"(%40, %42, %arg9) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %44 = "stablehlo.dynamic_update_slice"(%arg8, %33, %38, %43) : (tensor<8x4xf32>, tensor<2x2xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>
    %45 = "func.call"(%arg8) <{callee = @_flip}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %46 = "stablehlo.constant"() <{value = dense<-1.500000e+00> : tensor<f32>}> : () -> tensor<f32>
    %47 = "func.call"(%45, %46) <{callee = @_pad}> : (tensor<8x4xf32>, tensor<f32>) -> tensor<11x5xf32>
    %48 = "stablehlo.abs"(%arg8) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %49 = "stablehlo.sqrt"(%48) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %50 = "stablehlo.multiply"(%arg8, %arg8) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %51 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %52 = "stablehlo.broadcast_in_dim"(%51) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<8x4xf32>
    %53 = "stablehlo.add"(%52, %50) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %54 = "stablehlo.rsqrt"(%53) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %55 = "stablehlo.add"(%49, %54) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %56 = "stablehlo.abs"(%arg8) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %57 = "stablehlo.log_plus_one"(%56) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %58 = "stablehlo.add"(%55, %57) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %59 = "stablehlo.optimization_barrier"(%58) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %60 = "stablehlo.constant"() <{value = dense<2> : tensor<i32>}> : () -> tensor<i32>
    %61 = "stablehlo.broadcast_in_dim"(%60) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<4x8xi32>
    %62 = "stablehlo.shift_left"(%arg10, %61) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    %63 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %64 = "stablehlo.broadcast_in_dim"(%63) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<4x8xi32>
    %65 = "stablehlo.shift_right_arithmetic"(%arg10, %64) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    %66 = "stablehlo.xor"(%62, %65) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    %67 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
    %68 = "stablehlo.broadcast_in_dim"(%67) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<4x8xi32>
    %69 = "stablehlo.shift_right_arithmetic"(%arg10, %68) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    %70 = "stablehlo.or"(%66, %69) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    %71 = "stablehlo.sign"(%arg10) : (tensor<4x8xi32>) -> tensor<4x8xi32>
    %72 = "stablehlo.abs"(%arg10) : (tensor<4x8xi32>) -> tensor<4x8xi32>
    %73 = "stablehlo.multiply"(%71, %72) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    %74 = "stablehlo.constant"() <{value = dense<7> : tensor<i32>}> : () -> tensor<i32>
    %75 = "func.call"(%73, %74) <{callee = @remainder}> : (tensor<4x8xi32>, tensor<i32>) -> tensor<4x8xi32>
    %76 = "stablehlo.transpose"(%arg8) <{permutation = array<i64: 1, 0>}> : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %77 = "stablehlo.dot_general"(%76, %arg8) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    "func.return"(%31, %44, %47, %59, %70, %75, %77) : (tensor<3x2xf32>, tensor<8x4xf32>, tensor<11x5xf32>, tensor<8x4xf32>, tensor<4x8xi32>, tensor<4x8xi32>, tensor<4x4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<8x4xf32>) -> tensor<8x4xf32>, res_attrs = [{}], sym_name = "_flip", sym_visibility = "private"}> ({
  ^bb0(%arg7: tensor<8x4xf32>):
    %24 = "stablehlo.reverse"(%arg7) <{dimensions = array<i64: 1>}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
    "func.return"(%24) : (tensor<8x4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<8x4xf32>, tensor<f32>) -> tensor<11x5xf32>, res_attrs = [{}], sym_name = "_pad", sym_visibility = "private"}> ({
  ^bb0(%arg5: tensor<8x4xf32>, %arg6: tensor<f32>):
    %22 = "stablehlo.convert"(%arg6) : (tensor<f32>) -> tensor<f32>
    %23 = "stablehlo.pad"(%arg5, %22) <{edge_padding_high = array<i64: 2, 1>, edge_padding_low = array<i64: 1, 0>, interior_padding = array<i64: 0, 0>}> : (tensor<8x4xf32>, tensor<f32>) -> tensor<11x5xf32>
    "func.return"(%23) : (tensor<11x5xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<4x8xi32>, tensor<i32>) -> tensor<4x8xi32>, res_attrs = [{}], sym_name = "remainder", sym_visibility = "private"}> ({
  ^bb0(%arg3: tensor<4x8xi32>, %arg4: tensor<i32>):
    %1 = "stablehlo.convert"(%arg4) : (tensor<i32>) -> tensor<i32>
    %2 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %3 = "stablehlo.compare"(%1, %2) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction EQ>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %4 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %5 = "func.call"(%3, %4, %1) <{callee = @_where}> : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %6 = "stablehlo.broadcast_in_dim"(%5) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<4x8xi32>
    %7 = "stablehlo.remainder"(%arg3, %6) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    %8 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %9 = "stablehlo.broadcast_in_dim"(%8) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<4x8xi32>
    %10 = "stablehlo.compare"(%7, %9) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
    %11 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %12 = "stablehlo.broadcast_in_dim"(%11) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<4x8xi32>
    %13 = "stablehlo.compare"(%7, %12) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
    %14 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %15 = "stablehlo.compare"(%5, %14) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %16 = "stablehlo.broadcast_in_dim"(%15) <{broadcast_dimensions = array<i64>}> : (tensor<i1>) -> tensor<4x8xi1>
    %17 = "stablehlo.compare"(%13, %16) <{compare_type = #stablehlo<comparison_type UNSIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
    %18 = "stablehlo.and"(%17, %10) : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
    %19 = "stablehlo.broadcast_in_dim"(%5) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<4x8xi32>
    %20 = "stablehlo.add"(%7, %19) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    %21 = "stablehlo.select"(%18, %20, %7) : (tensor<4x8xi1>, tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
    "func.return"(%21) : (tensor<4x8xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}, {}], function_type = (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>, res_attrs = [{}], sym_name = "_where", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>):
    %0 = "stablehlo.select"(%arg0, %arg1, %arg2) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    "func.return"(%0) : (tensor<i32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
