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
#loc58 = loc("scf_func.mlir":60:15)
#loc59 = loc("scf_func.mlir":60:23)
#loc60 = loc("scf_func.mlir":60:32)
#loc63 = loc("scf_func.mlir":63:6)
#loc66 = loc("scf_func.mlir":67:6)
#loc67 = loc("scf_func.mlir":67:15)
"builtin.module"() ({
  "func.func"() <{function_type = (f32, tensor<4xf32>) -> f32, sym_name = "decl", sym_visibility = "private"}> ({
  }) : () -> () loc(#loc1)
  "func.func"() <{arg_attrs = [{my.arg}, {}], function_type = (f32, f32) -> (f32, f32), res_attrs = [{my.res}, {}], sym_name = "callee"}> ({
  ^bb0(%arg16: f32 loc("scf_func.mlir":3:19), %arg17: f32 loc("scf_func.mlir":3:37)):
    "func.return"(%arg16, %arg17) : (f32, f32) -> () loc(#loc5)
  }) : () -> () loc(#loc2)
  "func.func"() <{function_type = (i1, index, f32, tensor<4xf32>) -> (f32, tensor<4xf32>), sym_name = "scf"}> ({
  ^bb0(%arg3: i1 loc("scf_func.mlir":6:16), %arg4: index loc("scf_func.mlir":6:24), %arg5: f32 loc("scf_func.mlir":6:35), %arg6: tensor<4xf32> loc("scf_func.mlir":6:44)):
    %3 = "arith.constant"() <{value = 0 : index}> : () -> index loc(#loc11)
    %4 = "arith.constant"() <{value = 1 : index}> : () -> index loc(#loc12)
    %5:2 = "func.call"(%arg5, %arg5) <{callee = @callee}> : (f32, f32) -> (f32, f32) loc(#loc13)
    %6 = "func.call"(%5#0, %arg6) <{callee = @decl}> : (f32, tensor<4xf32>) -> f32 loc(#loc14)
    %7:2 = "scf.if"(%arg3) ({
      "scf.yield"(%arg5, %arg6) : (f32, tensor<4xf32>) -> () loc(#loc16)
    }, {
      %25 = "arith.addf"(%arg5, %6) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc17)
      "scf.yield"(%25, %arg6) : (f32, tensor<4xf32>) -> () loc(#loc18)
    }) : (i1) -> (f32, tensor<4xf32>) loc(#loc15)
    "scf.if"(%arg3) ({
      %24 = "arith.mulf"(%arg5, %arg5) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc20)
      "scf.yield"() : () -> () loc(#loc19)
    }, {
    }) : (i1) -> () loc(#loc19)
    "scf.if"(%arg3) ({
      "scf.yield"() : () -> () loc(#loc21)
    }, {
      %23 = "arith.mulf"(%arg5, %arg5) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc22)
      "scf.yield"() : () -> () loc(#loc21)
    }) : (i1) -> () loc(#loc21)
    %8:2 = "scf.for"(%3, %arg4, %4, %arg5, %arg6) ({
    ^bb0(%arg13: index loc("scf_func.mlir":24:20), %arg14: f32 loc("scf_func.mlir":24:54), %arg15: tensor<4xf32> loc("scf_func.mlir":24:65)):
      %21 = "arith.addf"(%arg14, %arg14) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc27)
      %22 = "tensor.insert"(%21, %arg15, %arg13) : (f32, tensor<4xf32>, index) -> tensor<4xf32> loc(#loc28)
      "scf.yield"(%21, %22) : (f32, tensor<4xf32>) -> () loc(#loc29)
    }) : (index, index, index, f32, tensor<4xf32>) -> (f32, tensor<4xf32>) loc(#loc23)
    "scf.for"(%3, %arg4, %4) ({
    ^bb0(%arg12: index loc("scf_func.mlir":29:11)):
      %20 = "arith.addf"(%arg5, %arg5) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc32)
      "scf.yield"() : () -> () loc(#loc30)
    }) : (index, index, index) -> () loc(#loc30)
    %9 = "arith.constant"() <{value = 3 : i32}> : () -> i32 loc(#loc33)
    %10 = "arith.constant"() <{value = 0 : i32}> : () -> i32 loc(#loc34)
    %11 = "arith.constant"() <{value = 1 : i32}> : () -> i32 loc(#loc35)
    "scf.for"(%10, %9, %11) <{unsignedCmp}> ({
    ^bb0(%arg11: i32 loc("scf_func.mlir":35:20)):
      "scf.yield"() : () -> () loc(#loc36)
    }) : (i32, i32, i32) -> () loc(#loc36)
    %12:2 = "scf.while"(%3, %arg5) ({
    ^bb0(%arg9: index loc("scf_func.mlir":37:21), %arg10: f32 loc("scf_func.mlir":37:31)):
      %19 = "arith.cmpi"(%arg9, %arg4) <{predicate = 2 : i64}> : (index, index) -> i1 loc(#loc41)
      "scf.condition"(%19, %arg9, %arg10) : (i1, index, f32) -> () loc(#loc42)
    }, {
    ^bb0(%arg7: index loc("scf_func.mlir":41:8), %arg8: f32 loc("scf_func.mlir":41:19)):
      %17 = "arith.addi"(%arg7, %4) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index loc(#loc45)
      %18 = "arith.addf"(%arg8, %arg8) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc46)
      "scf.yield"(%17, %18) : (index, f32) -> () loc(#loc47)
    }) : (index, f32) -> (index, f32) loc(#loc38)
    %13 = "scf.execute_region"() ({
      "scf.yield"(%arg5) : (f32) -> () loc(#loc49)
    }) : () -> f32 loc(#loc48)
    "cf.cond_br"(%arg3)[^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (i1) -> () loc(#loc50)
  ^bb1:  // pred: ^bb0
    "cf.br"(%arg5)[^bb3] : (f32) -> () loc(#loc51)
  ^bb2:  // pred: ^bb0
    "cf.br"(%12#1)[^bb3] : (f32) -> () loc(#loc52)
  ^bb3(%14: f32 loc("scf_func.mlir":54:6)):  // 2 preds: ^bb1, ^bb2
    %15 = "builtin.unrealized_conversion_cast"(%14) : (f32) -> i32 loc(#loc54)
    %16:2 = "builtin.unrealized_conversion_cast"(%14, %15) : (f32, i32) -> (f64, i64) loc(#loc55)
    "func.return"(%8#0, %7#1) : (f32, tensor<4xf32>) -> () loc(#loc56)
  }) {my.attr = 3 : i32} : () -> () loc(#loc6)
  "func.func"() <{function_type = (i1, f32, f32) -> f32, sym_name = "cf"}> ({
  ^bb0(%arg0: i1 loc("scf_func.mlir":60:15), %arg1: f32 loc("scf_func.mlir":60:23), %arg2: f32 loc("scf_func.mlir":60:32)):
    "cf.assert"(%arg0) <{msg = "c must hold"}> : (i1) -> () loc(#loc61)
    "cf.cond_br"(%arg0, %arg1)[^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i1, f32) -> () loc(#loc62)
  ^bb1(%0: f32 loc("scf_func.mlir":63:6)):  // pred: ^bb0
    "cf.br"(%0, %arg2)[^bb3] : (f32, f32) -> () loc(#loc64)
  ^bb2:  // pred: ^bb0
    "cf.br"(%arg2, %arg1)[^bb3] : (f32, f32) -> () loc(#loc65)
  ^bb3(%1: f32 loc("scf_func.mlir":67:6), %2: f32 loc("scf_func.mlir":67:15)):  // 2 preds: ^bb1, ^bb2
    "func.return"(%1) : (f32) -> () loc(#loc68)
  }) : () -> () loc(#loc57)
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
#loc57 = loc("scf_func.mlir":60:1)
#loc61 = loc("scf_func.mlir":61:3)
#loc62 = loc("scf_func.mlir":62:3)
#loc64 = loc("scf_func.mlir":64:3)
#loc65 = loc("scf_func.mlir":66:3)
#loc68 = loc("scf_func.mlir":68:3)

