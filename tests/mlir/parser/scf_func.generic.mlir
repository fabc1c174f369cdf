#loc3 = loc("scf_func.mlir":3:19)
#loc4 = loc("scf_func.mlir":3:37)
#loc7 = loc("scf_func.mlir":6:16)
#loc8 = loc("scf_func.mlir":6:24)
#loc9 = loc("scf_func.mlir":6:35)
#loc10 = loc("scf_func.mlir":6:44)
#loc24 = loc("scf_func.mlir":24:20)
#loc25 = loc("scf_func.mlir":24:54)
#loc26 = loc("scf_func.mlir":24:65)
#loc31 = loc("scf_func.mlir":29:11)
#loc37 = loc("scf_func.mlir":35:20)
#loc39 = loc("scf_func.mlir":37:21)
#loc40 = loc("scf_func.mlir":37:31)
#loc43 = loc("scf_func.mlir":41:8)
#loc44 = loc("scf_func.mlir":41:19)
#loc53 = loc("scf_func.mlir":54:6)
"builtin.module"() ({
  "func.func"() <{function_type = (f32, tensor<4xf32>) -> f32, sym_name = "decl", sym_visibility = "private"}> ({
  }) : () -> () loc(#loc1)
  "func.func"() <{arg_attrs = [{my.arg}, {}], function_type = (f32, f32) -> (f32, f32), res_attrs = [{my.res}, {}], sym_name = "callee"}> ({
  ^bb0(%arg13: f32 loc("scf_func.mlir":3:19), %arg14: f32 loc("scf_func.mlir":3:37)):
    "func.return"(%arg13, %arg14) : (f32, f32) -> () loc(#loc5)
  }) : () -> () loc(#loc2)
  "func.func"() <{function_type = (i1, index, f32, tensor<4xf32>) -> (f32, tensor<4xf32>), sym_name = "scf"}> ({
  ^bb0(%arg0: i1 loc("scf_func.mlir":6:16), %arg1: index loc("scf_func.mlir":6:24), %arg2: f32 loc("scf_func.mlir":6:35), %arg3: tensor<4xf32> loc("scf_func.mlir":6:44)):
    %0 = "arith.constant"() <{value = 0 : index}> : () -> index loc(#loc11)
    %1 = "arith.constant"() <{value = 1 : index}> : () -> index loc(#loc12)
    %2:2 = "func.call"(%arg2, %arg2) <{callee = @callee}> : (f32, f32) -> (f32, f32) loc(#loc13)
    %3 = "func.call"(%2#0, %arg3) <{callee = @decl}> : (f32, tensor<4xf32>) -> f32 loc(#loc14)
    %4:2 = "scf.if"(%arg0) ({
      "scf.yield"(%arg2, %arg3) : (f32, tensor<4xf32>) -> () loc(#loc16)
    }, {
      %22 = "arith.addf"(%arg2, %3) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc17)
      "scf.yield"(%22, %arg3) : (f32, tensor<4xf32>) -> () loc(#loc18)
    }) : (i1) -> (f32, tensor<4xf32>) loc(#loc15)
    "scf.if"(%arg0) ({
      %21 = "arith.mulf"(%arg2, %arg2) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc20)
      "scf.yield"() : () -> () loc(#loc19)
    }, {
    }) : (i1) -> () loc(#loc19)
    "scf.if"(%arg0) ({
      "scf.yield"() : () -> () loc(#loc21)
    }, {
      %20 = "arith.mulf"(%arg2, %arg2) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc22)
      "scf.yield"() : () -> () loc(#loc21)
    }) : (i1) -> () loc(#loc21)
    %5:2 = "scf.for"(%0, %arg1, %1, %arg2, %arg3) ({
    ^bb0(%arg10: index loc("scf_func.mlir":24:20), %arg11: f32 loc("scf_func.mlir":24:54), %arg12: tensor<4xf32> loc("scf_func.mlir":24:65)):
      %18 = "arith.addf"(%arg11, %arg11) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc27)
      %19 = "tensor.insert"(%18, %arg12, %arg10) : (f32, tensor<4xf32>, index) -> tensor<4xf32> loc(#loc28)
      "scf.yield"(%18, %19) : (f32, tensor<4xf32>) -> () loc(#loc29)
    }) : (index, index, index, f32, tensor<4xf32>) -> (f32, tensor<4xf32>) loc(#loc23)
    "scf.for"(%0, %arg1, %1) ({
    ^bb0(%arg9: index loc("scf_func.mlir":29:11)):
      %17 = "arith.addf"(%arg2, %arg2) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc32)
      "scf.yield"() : () -> () loc(#loc30)
    }) : (index, index, index) -> () loc(#loc30)
    %6 = "arith.constant"() <{value = 3 : i32}> : () -> i32 loc(#loc33)
    %7 = "arith.constant"() <{value = 0 : i32}> : () -> i32 loc(#loc34)
    %8 = "arith.constant"() <{value = 1 : i32}> : () -> i32 loc(#loc35)
    "scf.for"(%7, %6, %8) <{unsignedCmp}> ({
    ^bb0(%arg8: i32 loc("scf_func.mlir":35:20)):
      "scf.yield"() : () -> () loc(#loc36)
    }) : (i32, i32, i32) -> () loc(#loc36)
    %9:2 = "scf.while"(%0, %arg2) ({
    ^bb0(%arg6: index loc("scf_func.mlir":37:21), %arg7: f32 loc("scf_func.mlir":37:31)):
      %16 = "arith.cmpi"(%arg6, %arg1) <{predicate = 2 : i64}> : (index, index) -> i1 loc(#loc41)
      "scf.condition"(%16, %arg6, %arg7) : (i1, index, f32) -> () loc(#loc42)
    }, {
    ^bb0(%arg4: index loc("scf_func.mlir":41:8), %arg5: f32 loc("scf_func.mlir":41:19)):
      %14 = "arith.addi"(%arg4, %1) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index loc(#loc45)
      %15 = "arith.addf"(%arg5, %arg5) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc46)
      "scf.yield"(%14, %15) : (index, f32) -> () loc(#loc47)
    }) : (index, f32) -> (index, f32) loc(#loc38)
    %10 = "scf.execute_region"() ({
      "scf.yield"(%arg2) : (f32) -> () loc(#loc49)
    }) : () -> f32 loc(#loc48)
    "cf.cond_br"(%arg0)[^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (i1) -> () loc(#loc50)
  ^bb1:  // pred: ^bb0
    "cf.br"(%arg2)[^bb3] : (f32) -> () loc(#loc51)
  ^bb2:  // pred: ^bb0
    "cf.br"(%9#1)[^bb3] : (f32) -> () loc(#loc52)
  ^bb3(%11: f32 loc("scf_func.mlir":54:6)):  // 2 preds: ^bb1, ^bb2
    %12 = "builtin.unrealized_conversion_cast"(%11) : (f32) -> i32 loc(#loc54)
    %13:2 = "builtin.unrealized_conversion_cast"(%11, %12) : (f32, i32) -> (f64, i64) loc(#loc55)
    "func.return"(%5#0, %4#1) : (f32, tensor<4xf32>) -> () loc(#loc56)
  }) {my.attr = 3 : i32} : () -> () loc(#loc6)
}) : () -> () loc(#loc)
#loc = loc("scf_func.mlir":0:0)
#loc1 = loc("scf_func.mlir":2:1)
#loc2 = loc("scf_func.mlir":3:1)
#loc5 = loc("scf_func.mlir":4:3)
#loc6 = loc("scf_func.mlir":6:1)
#loc11 = loc("scf_func.mlir":7:9)
#loc12 = loc("scf_func.mlir":8:9)
#loc13 = loc("scf_func.mlir":9:10)
#loc14 = loc("scf_func.mlir":10:8)
#loc15 = loc("scf_func.mlir":11:11)
#loc16 = loc("scf_func.mlir":12:5)
#loc17 = loc("scf_func.mlir":14:10)
#loc18 = loc("scf_func.mlir":15:5)
#loc19 = loc("scf_func.mlir":17:3)
#loc20 = loc("scf_func.mlir":18:10)
#loc21 = loc("scf_func.mlir":20:3)
#loc22 = loc("scf_func.mlir":22:10)
#loc23 = loc("scf_func.mlir":24:12)
#loc27 = loc("scf_func.mlir":25:10)
#loc28 = loc("scf_func.mlir":26:10)
#loc29 = loc("scf_func.mlir":27:5)
#loc30 = loc("scf_func.mlir":29:3)
#loc32 = loc("scf_func.mlir":30:10)
#loc33 = loc("scf_func.mlir":32:9)
#loc34 = loc("scf_func.mlir":33:10)
#loc35 = loc("scf_func.mlir":34:10)
#loc36 = loc("scf_func.mlir":35:3)
#loc38 = loc("scf_func.mlir":37:10)
#loc41 = loc("scf_func.mlir":38:11)
#loc42 = loc("scf_func.mlir":39:5)
#loc45 = loc("scf_func.mlir":42:11)
#loc46 = loc("scf_func.mlir":43:11)
#loc47 = loc("scf_func.mlir":44:5)
#loc48 = loc("scf_func.mlir":46:9)
#loc49 = loc("scf_func.mlir":47:5)
#loc50 = loc("scf_func.mlir":49:3)
#loc51 = loc("scf_func.mlir":51:3)
#loc52 = loc("scf_func.mlir":53:3)
#loc54 = loc("scf_func.mlir":55:10)
#loc55 = loc("scf_func.mlir":56:13)
#loc56 = loc("scf_func.mlir":57:3)

