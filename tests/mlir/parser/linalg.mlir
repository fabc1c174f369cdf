// linalg named ops, map/reduce (both body forms) and generic.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @named(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>, %h: tensor<8x4xf16>,
                 %cd: tensor<4x4xf64>, %ia: tensor<4x8xi32>, %ib: tensor<8x4xi32>, %ic: tensor<4x4xi64>,
                 %ba: tensor<2x4x8xf32>, %bb: tensor<2x8x4xf32>, %bc: tensor<2x4x4xf32>, %x: f32, %xd: f64) -> tensor<4x4xf32> {
  %f = linalg.fill ins(%x : f32) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m2 = linalg.matmul ins(%a, %h : tensor<4x8xf32>, tensor<8x4xf16>) outs(%cd : tensor<4x4xf64>) -> tensor<4x4xf64>
  %m3 = linalg.matmul ins(%ia, %ib : tensor<4x8xi32>, tensor<8x4xi32>) outs(%ic : tensor<4x4xi64>) -> tensor<4x4xi64>
  %bm = linalg.batch_matmul ins(%ba, %bb : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%bc : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%b : tensor<8x4xf32>) permutation = [1, 0]
  %r1 = tensor.empty() : tensor<4xf32>
  %br = linalg.broadcast ins(%r1 : tensor<4xf32>) outs(%a : tensor<4x8xf32>) dimensions = [1]
  %add = linalg.add ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sub = linalg.sub ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mul = linalg.mul ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %div = linalg.div ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %max = linalg.max ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %min = linalg.min ins(%ia, %ia : tensor<4x8xi32>, tensor<4x8xi32>) outs(%ia : tensor<4x8xi32>) -> tensor<4x8xi32>
  %iadd = linalg.add ins(%ia, %ia : tensor<4x8xi32>, tensor<4x8xi32>) outs(%ia : tensor<4x8xi32>) -> tensor<4x8xi32>
  %exp = linalg.exp ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %log = linalg.log ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %abs = linalg.abs ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sqrt = linalg.sqrt ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %tanh = linalg.tanh ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %neg = linalg.negf ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %flo = linalg.floor ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %cpy = linalg.copy ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  %map = linalg.map ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%a : tensor<4x8xf32>)
    (%p: f32, %q: f32, %o: f32) {
      %0 = arith.mulf %p, %q : f32
      linalg.yield %0 : f32
    }
  %map2 = linalg.map { arith.addf } ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%a : tensor<4x8xf32>)
  %map3 = linalg.map { math.exp } ins(%a : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>)
  %red = linalg.reduce ins(%a : tensor<4x8xf32>) outs(%r1 : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %0 = arith.maximumf %in, %init : f32
      linalg.yield %0 : f32
    }
  %red2 = linalg.reduce { arith.addf } ins(%a : tensor<4x8xf32>) outs(%r1 : tensor<4xf32>) dimensions = [1]
  %gen = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%r1 : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %in, %out : f32
      linalg.yield %0 : f32
  } -> tensor<4xf32>
  %gen2 = linalg.generic {indexing_maps = [#tr, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"], doc = "transpose", library_call = "none"}
      ins(%b : tensor<8x4xf32>) outs(%a : tensor<4x8xf32>) attrs = {my.flag} {
    ^bb0(%in: f32, %out: f32):
      %i0 = linalg.index 0 : index
      %i1 = linalg.index 1 : index
      %s = arith.addi %i0, %i1 : index
      %si = arith.index_cast %s : index to i64
      %sf = arith.sitofp %si : i64 to f32
      %0 = arith.addf %in, %sf : f32
      linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %mt = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%b, %b : tensor<8x4xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}
