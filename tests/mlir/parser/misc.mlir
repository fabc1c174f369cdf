// Aliases, locations, comments, attribute kinds, a named module with attributes.
#map0 = affine_map<(d0, d1)[s0] -> (d0 + s0, d1 * 2, d0 floordiv 4, d1 mod 3, d0 ceildiv 2, d0 - d1)>
#map1 = affine_map<(i, j) -> (j, i)>
#map2 = affine_map<() -> (0)>
#map3 = affine_map<(d0, d1, d2) -> (d2, -d0 + 3 * (d1 + 1))>
!tt = tensor<2x?xf32>
!st = !shard.sharding
module @named attributes {my.flag, my.val = 4 : i64} {
  shard.grid @g(shape = 2x2) loc("somewhere.py":3:4)
  func.func @f(%a: !tt, %b: tensor<4xbf16>, %e: tensor<4xf32, "enc">) -> !tt {  // trailing comment
    %s = shard.sharding @g split_axes = [[0]] : !st
    %x = "my.op"(%a) {
      str = "a \"quoted\"\n string",
      arr = [1, 2.5, "x", [true, false], @g, @g::@h],
      dict = {k = 1 : i32, u},
      maps = [#map0, #map1, #map2, #map3],
      ty = tensor<4x?xi64>,
      fty = (f32, i1) -> (i32, tensor<2xf64>),
      d1 = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>,
      d2 = dense<-1> : tensor<3xi32>,
      d3 = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi16>,
      d4 = dense<"0x01000000020000000300000004000000"> : tensor<2x2xi32>,
      d5 = dense<1.5> : tensor<4xbf16>,
      d6 = dense<[]> : tensor<0xf32>,
      i8a = array<i8: 1, -2>, f32a = array<f32: 1.5, 2.0>, b1a = array<i1: true, false>, ea = array<i64>,
      neg = -7 : i64, flt = -2.5e+03 : f64, bits = 0x3FF0000000000000 : f64, u = unit,
      other = #my.thing<"complex" [1, 2]>, en = #my.enum<value>
    } : (!tt) -> !tt loc(#loc1)
    %y:2 = "my.two"() : () -> (i32, f32)
    "my.use"(%y#0, %y#1, %s) : (i32, f32, !shard.sharding) -> ()
    return %x : !tt
  }
}
#loc1 = loc("x.py":1:1)
