#loc2 = loc("linalg.mlir":5:18)
#loc3 = loc("linalg.mlir":5:39)
#loc4 = loc("linalg.mlir":5:60)
#loc5 = loc("linalg.mlir":5:81)
#loc6 = loc("linalg.mlir":6:18)
#loc7 = loc("linalg.mlir":6:40)
#loc8 = loc("linalg.mlir":6:62)
#loc9 = loc("linalg.mlir":6:84)
#loc10 = loc("linalg.mlir":7:18)
#loc11 = loc("linalg.mlir":7:42)
#loc12 = loc("linalg.mlir":7:66)
#loc13 = loc("linalg.mlir":7:90)
#loc14 = loc("linalg.mlir":7:99)
#loc16 = loc(unknown)
#loc22 = loc("linalg.mlir":14:9)
#loc40 = loc("linalg.mlir":32:6)
#loc41 = loc("linalg.mlir":32:15)
#loc42 = loc("linalg.mlir":32:24)
#loc48 = loc("linalg.mlir":39:6)
#loc49 = loc("linalg.mlir":39:16)
#loc54 = loc("linalg.mlir":46:10)
#loc55 = loc("linalg.mlir":46:20)
#loc59 = loc("linalg.mlir":52:10)
#loc60 = loc("linalg.mlir":52:20)
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map6 = affine_map<(d0, d1) -> (d0, d1)>
#map7 = affine_map<(d0, d1) -> (d0)>
#map8 = affine_map<(d0, d1) -> (d1, d0)>
#map9 = affine_map<(d0, d1, d2) -> (d2, d0)>
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<8x4xf16>, tensor<4x4xf64>, tensor<4x8xi32>, tensor<8x4xi32>, tensor<4x4xi64>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x4xf32>, f32, f64) -> tensor<4x4xf32>, sym_name = "named"}> ({
  ^bb0(%arg0: tensor<4x8xf32> loc("linalg.mlir":5:18), %arg1: tensor<8x4xf32> loc("linalg.mlir":5:39), %arg2: tensor<4x4xf32> loc("linalg.mlir":5:60), %arg3: tensor<8x4xf16> loc("linalg.mlir":5:81), %arg4: tensor<4x4xf64> loc("linalg.mlir":6:18), %arg5: tensor<4x8xi32> loc("linalg.mlir":6:40), %arg6: tensor<8x4xi32> loc("linalg.mlir":6:62), %arg7: tensor<4x4xi64> loc("linalg.mlir":6:84), %arg8: tensor<2x4x8xf32> loc("linalg.mlir":7:18), %arg9: tensor<2x8x4xf32> loc("linalg.mlir":7:42), %arg10: tensor<2x4x4xf32> loc("linalg.mlir":7:66), %arg11: f32 loc("linalg.mlir":7:90), %arg12: f64 loc("linalg.mlir":7:99)):
    %0 = "linalg.fill"(%arg11, %arg2) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg85: f32 loc(unknown), %arg86: f32 loc(unknown)):
      "linalg.yield"(%arg85) : (f32) -> () loc(#loc16)
    }) : (f32, tensor<4x4xf32>) -> tensor<4x4xf32> loc(#loc15)
    %1 = "linalg.matmul"(%arg0, %arg1, %0) <{indexing_maps = [#map, #map1, #map2], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg82: f32 loc(unknown), %arg83: f32 loc(unknown), %arg84: f32 loc(unknown)):
      %69 = "arith.mulf"(%arg82, %arg83) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      %70 = "arith.addf"(%arg84, %69) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      "linalg.yield"(%70) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(#loc17)
    %2 = "linalg.matmul"(%arg0, %arg3, %arg4) <{indexing_maps = [#map, #map1, #map2], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg79: f32 loc(unknown), %arg80: f16 loc(unknown), %arg81: f64 loc(unknown)):
      %65 = "arith.extf"(%arg79) : (f32) -> f64 loc(#loc16)
      %66 = "arith.extf"(%arg80) : (f16) -> f64 loc(#loc16)
      %67 = "arith.mulf"(%65, %66) <{fastmath = #arith.fastmath<none>}> : (f64, f64) -> f64 loc(#loc16)
      %68 = "arith.addf"(%arg81, %67) <{fastmath = #arith.fastmath<none>}> : (f64, f64) -> f64 loc(#loc16)
      "linalg.yield"(%68) : (f64) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<8x4xf16>, tensor<4x4xf64>) -> tensor<4x4xf64> loc(#loc18)
    %3 = "linalg.matmul"(%arg5, %arg6, %arg7) <{indexing_maps = [#map, #map1, #map2], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg76: i32 loc(unknown), %arg77: i32 loc(unknown), %arg78: i64 loc(unknown)):
      %61 = "arith.extsi"(%arg76) : (i32) -> i64 loc(#loc16)
      %62 = "arith.extsi"(%arg77) : (i32) -> i64 loc(#loc16)
      %63 = "arith.muli"(%61, %62) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64 loc(#loc16)
      %64 = "arith.addi"(%arg78, %63) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64 loc(#loc16)
      "linalg.yield"(%64) : (i64) -> () loc(#loc16)
    }) : (tensor<4x8xi32>, tensor<8x4xi32>, tensor<4x4xi64>) -> tensor<4x4xi64> loc(#loc19)
    %4 = "linalg.batch_matmul"(%arg8, %arg9, %arg10) <{indexing_maps = [#map3, #map4, #map5], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg73: f32 loc(unknown), %arg74: f32 loc(unknown), %arg75: f32 loc(unknown)):
      %59 = "arith.mulf"(%arg73, %arg74) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      %60 = "arith.addf"(%arg75, %59) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      "linalg.yield"(%60) : (f32) -> () loc(#loc16)
    }) : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc(#loc20)
    %5 = "linalg.transpose"(%arg0, %arg1) <{permutation = array<i64: 1, 0>}> ({
    ^bb0(%arg71: f32 loc("linalg.mlir":5:18), %arg72: f32 loc("linalg.mlir":5:39)):
      "linalg.yield"(%arg71) : (f32) -> () loc(#loc21)
    }) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32> loc(#loc21)
    %6 = "tensor.empty"() : () -> tensor<4xf32> loc(#loc22)
    %7 = "linalg.broadcast"(%6, %arg0) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg69: f32 loc("linalg.mlir":14:9), %arg70: f32 loc("linalg.mlir":5:18)):
      "linalg.yield"(%arg69) : (f32) -> () loc(#loc23)
    }) : (tensor<4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc23)
    %8 = "linalg.add"(%arg0, %arg0, %arg0) <{operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg66: f32 loc(unknown), %arg67: f32 loc(unknown), %arg68: f32 loc(unknown)):
      %58 = "arith.addf"(%arg66, %arg67) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      "linalg.yield"(%58) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc24)
    %9 = "linalg.sub"(%arg0, %arg0, %arg0) <{operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg63: f32 loc(unknown), %arg64: f32 loc(unknown), %arg65: f32 loc(unknown)):
      %57 = "arith.subf"(%arg63, %arg64) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      "linalg.yield"(%57) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc25)
    %10 = "linalg.mul"(%arg0, %arg0, %arg0) <{operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg60: f32 loc(unknown), %arg61: f32 loc(unknown), %arg62: f32 loc(unknown)):
      %56 = "arith.mulf"(%arg60, %arg61) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      "linalg.yield"(%56) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc26)
    %11 = "linalg.div"(%arg0, %arg0, %arg0) <{operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg57: f32 loc(unknown), %arg58: f32 loc(unknown), %arg59: f32 loc(unknown)):
      %55 = "arith.divf"(%arg57, %arg58) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      "linalg.yield"(%55) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc27)
    %12 = "linalg.max"(%arg0, %arg0, %arg0) <{operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg54: f32 loc(unknown), %arg55: f32 loc(unknown), %arg56: f32 loc(unknown)):
      %54 = "arith.maximumf"(%arg54, %arg55) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      "linalg.yield"(%54) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc28)
    %13 = "linalg.min"(%arg5, %arg5, %arg5) <{operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg51: i32 loc(unknown), %arg52: i32 loc(unknown), %arg53: i32 loc(unknown)):
      %53 = "arith.minsi"(%arg51, %arg52) : (i32, i32) -> i32 loc(#loc16)
      "linalg.yield"(%53) : (i32) -> () loc(#loc16)
    }) : (tensor<4x8xi32>, tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32> loc(#loc29)
    %14 = "linalg.add"(%arg5, %arg5, %arg5) <{operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg48: i32 loc(unknown), %arg49: i32 loc(unknown), %arg50: i32 loc(unknown)):
      %52 = "arith.addi"(%arg48, %arg49) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32 loc(#loc16)
      "linalg.yield"(%52) : (i32) -> () loc(#loc16)
    }) : (tensor<4x8xi32>, tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32> loc(#loc30)
    %15 = "linalg.exp"(%arg0, %arg0) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg46: f32 loc(unknown), %arg47: f32 loc(unknown)):
      %51 = "math.exp"(%arg46) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32 loc(#loc16)
      "linalg.yield"(%51) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc31)
    %16 = "linalg.log"(%arg0, %arg0) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg44: f32 loc(unknown), %arg45: f32 loc(unknown)):
      %50 = "math.log"(%arg44) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32 loc(#loc16)
      "linalg.yield"(%50) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc32)
    %17 = "linalg.abs"(%arg0, %arg0) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg42: f32 loc(unknown), %arg43: f32 loc(unknown)):
      %49 = "math.absf"(%arg42) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32 loc(#loc16)
      "linalg.yield"(%49) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc33)
    %18 = "linalg.sqrt"(%arg0, %arg0) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg40: f32 loc(unknown), %arg41: f32 loc(unknown)):
      %48 = "math.sqrt"(%arg40) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32 loc(#loc16)
      "linalg.yield"(%48) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc34)
    %19 = "linalg.tanh"(%arg0, %arg0) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg38: f32 loc(unknown), %arg39: f32 loc(unknown)):
      %47 = "math.tanh"(%arg38) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32 loc(#loc16)
      "linalg.yield"(%47) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc35)
    %20 = "linalg.negf"(%arg0, %arg0) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg36: f32 loc(unknown), %arg37: f32 loc(unknown)):
      %46 = "arith.negf"(%arg36) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32 loc(#loc16)
      "linalg.yield"(%46) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc36)
    %21 = "linalg.floor"(%arg0, %arg0) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg34: f32 loc(unknown), %arg35: f32 loc(unknown)):
      %45 = "math.floor"(%arg34) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32 loc(#loc16)
      "linalg.yield"(%45) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc37)
    %22 = "linalg.copy"(%arg0, %arg0) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg32: f32 loc(unknown), %arg33: f32 loc(unknown)):
      "linalg.yield"(%arg32) : (f32) -> () loc(#loc16)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc38)
    %23 = "linalg.map"(%arg0, %arg0, %arg0) ({
    ^bb0(%arg29: f32 loc("linalg.mlir":32:6), %arg30: f32 loc("linalg.mlir":32:15), %arg31: f32 loc("linalg.mlir":32:24)):
      %44 = "arith.mulf"(%arg29, %arg30) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc43)
      "linalg.yield"(%44) : (f32) -> () loc(#loc44)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc39)
    %24 = "linalg.map"(%arg0, %arg0, %arg0) ({
    ^bb0(%arg26: f32 loc(unknown), %arg27: f32 loc(unknown), %arg28: f32 loc(unknown)):
      %43 = "arith.addf"(%arg26, %arg27) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc45)
      "linalg.yield"(%43) : (f32) -> () loc(#loc45)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc45)
    %25 = "linalg.map"(%arg0, %arg0) ({
    ^bb0(%arg24: f32 loc(unknown), %arg25: f32 loc(unknown)):
      %42 = "math.exp"(%arg24) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32 loc(#loc46)
      "linalg.yield"(%42) : (f32) -> () loc(#loc46)
    }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc46)
    %26 = "linalg.reduce"(%arg0, %6) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg22: f32 loc("linalg.mlir":39:6), %arg23: f32 loc("linalg.mlir":39:16)):
      %41 = "arith.maximumf"(%arg22, %arg23) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc50)
      "linalg.yield"(%41) : (f32) -> () loc(#loc51)
    }) : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4xf32> loc(#loc47)
    %27 = "linalg.reduce"(%arg0, %6) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg20: f32 loc(unknown), %arg21: f32 loc(unknown)):
      %40 = "arith.addf"(%arg21, %arg20) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc52)
      "linalg.yield"(%40) : (f32) -> () loc(#loc52)
    }) : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4xf32> loc(#loc52)
    %28 = "linalg.generic"(%arg0, %6) <{indexing_maps = [#map6, #map7], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<reduction>], operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg18: f32 loc("linalg.mlir":46:10), %arg19: f32 loc("linalg.mlir":46:20)):
      %39 = "arith.addf"(%arg18, %arg19) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc56)
      "linalg.yield"(%39) : (f32) -> () loc(#loc57)
    }) : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4xf32> loc(#loc53)
    %29 = "linalg.generic"(%arg1, %arg0) <{doc = "transpose", indexing_maps = [#map8, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], library_call = "none", operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg16: f32 loc("linalg.mlir":52:10), %arg17: f32 loc("linalg.mlir":52:20)):
      %33 = "linalg.index"() <{dim = 0 : i64}> : () -> index loc(#loc61)
      %34 = "linalg.index"() <{dim = 1 : i64}> : () -> index loc(#loc62)
      %35 = "arith.addi"(%33, %34) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index loc(#loc63)
      %36 = "arith.index_cast"(%35) : (index) -> i64 loc(#loc64)
      %37 = "arith.sitofp"(%36) : (i64) -> f32 loc(#loc65)
      %38 = "arith.addf"(%arg16, %37) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc66)
      "linalg.yield"(%38) : (f32) -> () loc(#loc67)
    }) {my.flag} : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#loc58)
    %30 = "linalg.matmul"(%arg1, %arg1, %arg2) <{indexing_maps = [#map9, #map1, #map2], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg13: f32 loc(unknown), %arg14: f32 loc(unknown), %arg15: f32 loc(unknown)):
      %31 = "arith.mulf"(%arg13, %arg14) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      %32 = "arith.addf"(%arg15, %31) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc16)
      "linalg.yield"(%32) : (f32) -> () loc(#loc16)
    }) : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(#loc68)
    "func.return"(%1) : (tensor<4x4xf32>) -> () loc(#loc69)
  }) : () -> () loc(#loc1)
}) : () -> () loc(#loc)
#loc = loc("linalg.mlir":0:0)
#loc1 = loc("linalg.mlir":5:1)
#loc15 = loc("linalg.mlir":8:8)
#loc17 = loc("linalg.mlir":9:8)
#loc18 = loc("linalg.mlir":10:9)
#loc19 = loc("linalg.mlir":11:9)
#loc20 = loc("linalg.mlir":12:9)
#loc21 = loc("linalg.mlir":13:8)
#loc23 = loc("linalg.mlir":15:9)
#loc24 = loc("linalg.mlir":16:10)
#loc25 = loc("linalg.mlir":17:10)
#loc26 = loc("linalg.mlir":18:10)
#loc27 = loc("linalg.mlir":19:10)
#loc28 = loc("linalg.mlir":20:10)
#loc29 = loc("linalg.mlir":21:10)
#loc30 = loc("linalg.mlir":22:11)
#loc31 = loc("linalg.mlir":23:10)
#loc32 = loc("linalg.mlir":24:10)
#loc33 = loc("linalg.mlir":25:10)
#loc34 = loc("linalg.mlir":26:11)
#loc35 = loc("linalg.mlir":27:11)
#loc36 = loc("linalg.mlir":28:10)
#loc37 = loc("linalg.mlir":29:10)
#loc38 = loc("linalg.mlir":30:10)
#loc39 = loc("linalg.mlir":31:10)
#loc43 = loc("linalg.mlir":33:12)
#loc44 = loc("linalg.mlir":34:7)
#loc45 = loc("linalg.mlir":36:11)
#loc46 = loc("linalg.mlir":37:11)
#loc47 = loc("linalg.mlir":38:10)
#loc50 = loc("linalg.mlir":40:12)
#loc51 = loc("linalg.mlir":41:7)
#loc52 = loc("linalg.mlir":43:11)
#loc53 = loc("linalg.mlir":44:10)
#loc56 = loc("linalg.mlir":47:12)
#loc57 = loc("linalg.mlir":48:7)
#loc58 = loc("linalg.mlir":50:11)
#loc61 = loc("linalg.mlir":53:13)
#loc62 = loc("linalg.mlir":54:13)
#loc63 = loc("linalg.mlir":55:12)
#loc64 = loc("linalg.mlir":56:13)
#loc65 = loc("linalg.mlir":57:13)
#loc66 = loc("linalg.mlir":58:12)
#loc67 = loc("linalg.mlir":59:7)
#loc68 = loc("linalg.mlir":61:9)
#loc69 = loc("linalg.mlir":63:3)

