#loc3 = loc("mlp_partitioned.mlir":5:18)
#loc4 = loc("mlp_partitioned.mlir":5:44)
#loc5 = loc("mlp_partitioned.mlir":5:70)
#loc9 = loc(unknown)
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
"builtin.module"() ({
  "shard.grid"() <{shape = array<i64: 4>, sym_name = "grid"}> : () -> () loc(#loc1)
  "func.func"() <{function_type = (tensor<16x64xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>, sym_name = "mlp"}> ({
  ^bb0(%arg0: tensor<16x64xf32> loc("mlp_partitioned.mlir":5:18), %arg1: tensor<64x32xf32> loc("mlp_partitioned.mlir":5:44), %arg2: tensor<32x64xf32> loc("mlp_partitioned.mlir":5:70)):
    %0 = "arith.constant"() <{value = 0.000000e+00 : f32}> : () -> f32 loc(#loc6)
    %1 = "tensor.empty"() : () -> tensor<16x32xf32> loc(#loc7)
    %2 = "linalg.fill"(%0, %1) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg13: f32 loc(unknown), %arg14: f32 loc(unknown)):
      "linalg.yield"(%arg13) : (f32) -> () loc(#loc9)
    }) : (f32, tensor<16x32xf32>) -> tensor<16x32xf32> loc(#loc8)
    %3 = "linalg.matmul"(%arg0, %arg1, %2) <{indexing_maps = [#map, #map1, #map2], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg10: f32 loc(unknown), %arg11: f32 loc(unknown), %arg12: f32 loc(unknown)):
      %18 = "arith.mulf"(%arg10, %arg11) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc9)
      %19 = "arith.addf"(%arg12, %18) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc9)
      "linalg.yield"(%19) : (f32) -> () loc(#loc9)
    }) : (tensor<16x64xf32>, tensor<64x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32> loc(#loc10)
    %4 = "tensor.empty"() : () -> tensor<16x64xf32> loc(#loc11)
    %5 = "linalg.fill"(%0, %4) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg8: f32 loc(unknown), %arg9: f32 loc(unknown)):
      "linalg.yield"(%arg8) : (f32) -> () loc(#loc9)
    }) : (f32, tensor<16x64xf32>) -> tensor<16x64xf32> loc(#loc12)
    %6 = "shard.process_multi_index"() <{axes = array<i16: 0>, grid = @grid}> : () -> index loc(#loc13)
    %7 = "shard.grid_shape"() <{axes = array<i16: 0>, grid = @grid}> : () -> index loc(#loc14)
    %8 = "arith.constant"() <{value = 0 : index}> : () -> index loc(#loc15)
    %9 = "arith.cmpi"(%6, %8) <{predicate = 0 : i64}> : (index, index) -> i1 loc(#loc16)
    %10 = "scf.if"(%9) ({
      "scf.yield"(%5) : (tensor<16x64xf32>) -> () loc(#loc18)
    }, {
      %15 = "tensor.empty"() : () -> tensor<16x64xf32> loc(#loc19)
      %16 = "arith.constant"() <{value = 0.000000e+00 : f32}> : () -> f32 loc(#loc20)
      %17 = "linalg.fill"(%16, %15) <{operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg6: f32 loc(unknown), %arg7: f32 loc(unknown)):
        "linalg.yield"(%arg6) : (f32) -> () loc(#loc9)
      }) : (f32, tensor<16x64xf32>) -> tensor<16x64xf32> loc(#loc21)
      "scf.yield"(%17) : (tensor<16x64xf32>) -> () loc(#loc22)
    }) : (i1) -> tensor<16x64xf32> loc(#loc17)
    %11 = "linalg.matmul"(%3, %arg2, %10) <{indexing_maps = [#map, #map1, #map2], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg3: f32 loc(unknown), %arg4: f32 loc(unknown), %arg5: f32 loc(unknown)):
      %13 = "arith.mulf"(%arg3, %arg4) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc9)
      %14 = "arith.addf"(%arg5, %13) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32 loc(#loc9)
      "linalg.yield"(%14) : (f32) -> () loc(#loc9)
    }) : (tensor<16x32xf32>, tensor<32x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32> loc(#loc23)
    %12 = "shard.all_reduce"(%11) <{grid = @grid, grid_axes = array<i16: 0>, reduction = #shard<partial sum>}> : (tensor<16x64xf32>) -> tensor<16x64xf32> loc(#loc24)
    "func.return"(%12) : (tensor<16x64xf32>) -> () loc(#loc25)
  }) : () -> () loc(#loc2)
}) : () -> () loc(#loc)
#loc = loc("mlp_partitioned.mlir":3:1)
#loc1 = loc("mlp_partitioned.mlir":4:3)
#loc2 = loc("mlp_partitioned.mlir":5:3)
#loc6 = loc("mlp_partitioned.mlir":6:12)
#loc7 = loc("mlp_partitioned.mlir":7:10)
#loc8 = loc("mlp_partitioned.mlir":8:10)
#loc10 = loc("mlp_partitioned.mlir":9:10)
#loc11 = loc("mlp_partitioned.mlir":10:10)
#loc12 = loc("mlp_partitioned.mlir":11:10)
#loc13 = loc("mlp_partitioned.mlir":12:24)
#loc14 = loc("mlp_partitioned.mlir":13:19)
#loc15 = loc("mlp_partitioned.mlir":14:11)
#loc16 = loc("mlp_partitioned.mlir":15:10)
#loc17 = loc("mlp_partitioned.mlir":16:10)
#loc18 = loc("mlp_partitioned.mlir":17:7)
#loc19 = loc("mlp_partitioned.mlir":19:12)
#loc20 = loc("mlp_partitioned.mlir":20:16)
#loc21 = loc("mlp_partitioned.mlir":21:12)
#loc22 = loc("mlp_partitioned.mlir":22:7)
#loc23 = loc("mlp_partitioned.mlir":24:10)
#loc24 = loc("mlp_partitioned.mlir":25:19)
#loc25 = loc("mlp_partitioned.mlir":26:5)

