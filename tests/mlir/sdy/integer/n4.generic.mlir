"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], function_type = (tensor<8x6xi32>, tensor<8x6xi32>) -> (tensor<8x6xi32>, tensor<8x6xi32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg15: tensor<8x6xi32>, %arg16: tensor<8x6xi32>):
    %59 = "stablehlo.compare"(%arg15, %arg16) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %60 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
    %61 = "func.call"(%arg15, %60) <{callee = @remainder}> : (tensor<8x6xi32>, tensor<i32>) -> tensor<8x6xi32>
    %62 = "stablehlo.constant"() <{value = dense<4> : tensor<i32>}> : () -> tensor<i32>
    %63 = "func.call"(%arg16, %62) <{callee = @floor_divide}> : (tensor<8x6xi32>, tensor<i32>) -> tensor<8x6xi32>
    %64 = "func.call"(%59, %61, %63) <{callee = @_where_0}> : (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %65 = "stablehlo.constant"() <{value = dense<-5> : tensor<i32>}> : () -> tensor<i32>
    %66 = "stablehlo.constant"() <{value = dense<5> : tensor<i32>}> : () -> tensor<i32>
    %67 = "func.call"(%arg15, %65, %66) <{callee = @clip}> : (tensor<8x6xi32>, tensor<i32>, tensor<i32>) -> tensor<8x6xi32>
    %68 = "stablehlo.add"(%64, %67) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %69 = "stablehlo.multiply"(%arg15, %arg16) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %70 = "stablehlo.abs"(%arg16) : (tensor<8x6xi32>) -> tensor<8x6xi32>
    %71 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %72 = "stablehlo.broadcast_in_dim"(%71) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %73 = "stablehlo.maximum"(%70, %72) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %74 = "func.call"(%69, %73) <{callee = @floor_divide_1}> : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    "func.return"(%68, %74) : (tensor<8x6xi32>, tensor<8x6xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<8x6xi32>, tensor<i32>) -> tensor<8x6xi32>, res_attrs = [{}], sym_name = "remainder", sym_visibility = "private"}> ({
  ^bb0(%arg13: tensor<8x6xi32>, %arg14: tensor<i32>):
    %38 = "stablehlo.convert"(%arg14) : (tensor<i32>) -> tensor<i32>
    %39 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %40 = "stablehlo.compare"(%38, %39) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction EQ>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %41 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %42 = "func.call"(%40, %41, %38) <{callee = @_where}> : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %43 = "stablehlo.broadcast_in_dim"(%42) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %44 = "stablehlo.remainder"(%arg13, %43) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %45 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %46 = "stablehlo.broadcast_in_dim"(%45) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %47 = "stablehlo.compare"(%44, %46) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %48 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %49 = "stablehlo.broadcast_in_dim"(%48) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %50 = "stablehlo.compare"(%44, %49) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %51 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %52 = "stablehlo.compare"(%42, %51) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %53 = "stablehlo.broadcast_in_dim"(%52) <{broadcast_dimensions = array<i64>}> : (tensor<i1>) -> tensor<8x6xi1>
    %54 = "stablehlo.compare"(%50, %53) <{compare_type = #stablehlo<comparison_type UNSIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<8x6xi1>, tensor<8x6xi1>) -> tensor<8x6xi1>
    %55 = "stablehlo.and"(%54, %47) : (tensor<8x6xi1>, tensor<8x6xi1>) -> tensor<8x6xi1>
    %56 = "stablehlo.broadcast_in_dim"(%42) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %57 = "stablehlo.add"(%44, %56) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %58 = "stablehlo.select"(%55, %57, %44) : (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    "func.return"(%58) : (tensor<8x6xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}, {}], function_type = (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>, res_attrs = [{}], sym_name = "_where", sym_visibility = "private"}> ({
  ^bb0(%arg10: tensor<i1>, %arg11: tensor<i32>, %arg12: tensor<i32>):
    %37 = "stablehlo.select"(%arg10, %arg11, %arg12) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    "func.return"(%37) : (tensor<i32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<8x6xi32>, tensor<i32>) -> tensor<8x6xi32>, res_attrs = [{}], sym_name = "floor_divide", sym_visibility = "private"}> ({
  ^bb0(%arg8: tensor<8x6xi32>, %arg9: tensor<i32>):
    %20 = "stablehlo.convert"(%arg9) : (tensor<i32>) -> tensor<i32>
    %21 = "stablehlo.broadcast_in_dim"(%20) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %22 = "stablehlo.divide"(%arg8, %21) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %23 = "stablehlo.sign"(%arg8) : (tensor<8x6xi32>) -> tensor<8x6xi32>
    %24 = "stablehlo.sign"(%20) : (tensor<i32>) -> tensor<i32>
    %25 = "stablehlo.broadcast_in_dim"(%24) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %26 = "stablehlo.compare"(%23, %25) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %27 = "stablehlo.broadcast_in_dim"(%20) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %28 = "stablehlo.remainder"(%arg8, %27) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %29 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %30 = "stablehlo.broadcast_in_dim"(%29) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %31 = "stablehlo.compare"(%28, %30) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %32 = "stablehlo.and"(%26, %31) : (tensor<8x6xi1>, tensor<8x6xi1>) -> tensor<8x6xi1>
    %33 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %34 = "stablehlo.broadcast_in_dim"(%33) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %35 = "stablehlo.subtract"(%22, %34) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %36 = "func.call"(%32, %35, %22) <{callee = @_where_0}> : (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    "func.return"(%36) : (tensor<8x6xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}, {}], function_type = (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>, res_attrs = [{}], sym_name = "_where_0", sym_visibility = "private"}> ({
  ^bb0(%arg5: tensor<8x6xi1>, %arg6: tensor<8x6xi32>, %arg7: tensor<8x6xi32>):
    %19 = "stablehlo.select"(%arg5, %arg6, %arg7) : (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    "func.return"(%19) : (tensor<8x6xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}, {}], function_type = (tensor<8x6xi32>, tensor<i32>, tensor<i32>) -> tensor<8x6xi32>, res_attrs = [{}], sym_name = "clip", sym_visibility = "private"}> ({
  ^bb0(%arg2: tensor<8x6xi32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
    %13 = "stablehlo.convert"(%arg3) : (tensor<i32>) -> tensor<i32>
    %14 = "stablehlo.broadcast_in_dim"(%13) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %15 = "stablehlo.maximum"(%14, %arg2) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %16 = "stablehlo.convert"(%arg4) : (tensor<i32>) -> tensor<i32>
    %17 = "stablehlo.broadcast_in_dim"(%16) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %18 = "stablehlo.minimum"(%17, %15) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    "func.return"(%18) : (tensor<8x6xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>, res_attrs = [{}], sym_name = "floor_divide_1", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<8x6xi32>, %arg1: tensor<8x6xi32>):
    %0 = "stablehlo.divide"(%arg0, %arg1) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %1 = "stablehlo.sign"(%arg0) : (tensor<8x6xi32>) -> tensor<8x6xi32>
    %2 = "stablehlo.sign"(%arg1) : (tensor<8x6xi32>) -> tensor<8x6xi32>
    %3 = "stablehlo.compare"(%1, %2) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %4 = "stablehlo.remainder"(%arg0, %arg1) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %5 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %6 = "stablehlo.broadcast_in_dim"(%5) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %7 = "stablehlo.compare"(%4, %6) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi1>
    %8 = "stablehlo.and"(%3, %7) : (tensor<8x6xi1>, tensor<8x6xi1>) -> tensor<8x6xi1>
    %9 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %10 = "stablehlo.broadcast_in_dim"(%9) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<8x6xi32>
    %11 = "stablehlo.subtract"(%0, %10) : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    %12 = "func.call"(%8, %11, %0) <{callee = @_where_0}> : (tensor<8x6xi1>, tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<8x6xi32>
    "func.return"(%12) : (tensor<8x6xi32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
