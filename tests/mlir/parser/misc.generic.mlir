#loc3 = loc("misc.mlir":10:16)
#loc4 = loc("misc.mlir":10:25)
#loc5 = loc("misc.mlir":10:45)
#map = affine_map<(d0, d1)[s0] -> (d0 + s0, d1 * 2, d0 floordiv 4, d1 mod 3, d0 ceildiv 2, d0 - d1)>
#map1 = affine_map<(d0, d1) -> (d1, d0)>
#map2 = affine_map<() -> (0)>
#map3 = affine_map<(d0, d1, d2) -> (d2, -d0 + (d1 + 1) * 3)>
"builtin.module"() <{sym_name = "named"}> ({
  "shard.grid"() <{shape = array<i64: 2, 2>, sym_name = "g"}> : () -> () loc(#loc1)
  "func.func"() <{function_type = (tensor<2x?xf32>, tensor<4xbf16>, tensor<4xf32, "enc">) -> tensor<2x?xf32>, sym_name = "f"}> ({
  ^bb0(%arg0: tensor<2x?xf32> loc("misc.mlir":10:16), %arg1: tensor<4xbf16> loc("misc.mlir":10:25), %arg2: tensor<4xf32, "enc"> loc("misc.mlir":10:45)):
    %0 = "shard.sharding"() <{grid = @g, operandSegmentSizes = array<i32: 0, 0>, split_axes = #shard<axisarray[[0]]>, static_halo_sizes = array<i64>, static_sharded_dims_offsets = array<i64>}> : () -> !shard.sharding loc(#loc6)
    %1 = "my.op"(%arg0) {arr = [1, 2.500000e+00, "x", [true, false], @g, @g::@h], b1a = array<i1: true, false>, bits = 1.000000e+00 : f64, d1 = dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf64>, d2 = dense<-1> : tensor<3xi32>, d3 = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi16>, d4 = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>, d5 = dense<1.500000e+00> : tensor<4xbf16>, d6 = dense<> : tensor<0xf32>, dict = {k = 1 : i32, u}, ea = array<i64>, en = #my.enum<value>, f32a = array<f32: 1.500000e+00, 2.000000e+00>, flt = -2.500000e+03 : f64, fty = (f32, i1) -> (i32, tensor<2xf64>), i8a = array<i8: 1, -2>, maps = [#map, #map1, #map2, #map3], neg = -7 : i64, other = #my.thing<"complex" [1, 2]>, str = "a \22quoted\22\0A string", ty = tensor<4x?xi64>, u} : (tensor<2x?xf32>) -> tensor<2x?xf32> loc(#loc7)
    %2:2 = "my.two"() : () -> (i32, f32) loc(#loc8)
    "my.use"(%2#0, %2#1, %0) : (i32, f32, !shard.sharding) -> () loc(#loc9)
    "func.return"(%1) : (tensor<2x?xf32>) -> () loc(#loc10)
  }) : () -> () loc(#loc2)
}) {my.flag, my.val = 4 : i64} : () -> () loc(#loc)
#loc = loc("misc.mlir":8:1)
#loc1 = loc("somewhere.py":3:4)
#loc2 = loc("misc.mlir":10:3)
#loc6 = loc("misc.mlir":11:10)
#loc7 = loc("x.py":1:1)
#loc8 = loc("misc.mlir":29:12)
#loc9 = loc("misc.mlir":30:5)
#loc10 = loc("misc.mlir":31:5)

