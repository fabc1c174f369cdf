// tensor dialect ops in custom form.
func.func @tensor_ops(%t: tensor<8x16xf32>, %d: tensor<?x16xf32>, %i: index, %j: index, %v: f32) -> tensor<8x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e0 = tensor.empty() : tensor<4x4xf32>
  %e1 = tensor.empty(%i, %j) : tensor<?x?xi32>
  %x = tensor.extract %t[%i, %j] : tensor<8x16xf32>
  %ins = tensor.insert %v into %t[%c0, %c1] : tensor<8x16xf32>
  %s0 = tensor.extract_slice %t[0, 4] [4, 8] [1, 1] : tensor<8x16xf32> to tensor<4x8xf32>
  %s1 = tensor.extract_slice %t[%i, 0] [2, %j] [1, 2] : tensor<8x16xf32> to tensor<2x?xf32>
  %s2 = tensor.extract_slice %t[0, 0] [1, 16] [1, 1] : tensor<8x16xf32> to tensor<16xf32>
  %u0 = tensor.insert_slice %s0 into %t[4, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<8x16xf32>
  %u1 = tensor.insert_slice %s1 into %t[%i, %j] [2, %j] [1, 2] : tensor<2x?xf32> into tensor<8x16xf32>
  %cs = tensor.cast %t : tensor<8x16xf32> to tensor<?x16xf32>
  %cs2 = tensor.cast %d : tensor<?x16xf32> to tensor<8x16xf32>
  %dm = tensor.dim %d, %c0 : tensor<?x16xf32>
  %sp = tensor.splat %v : tensor<4x4xf32>
  %sp2 = tensor.splat %v[%i] : tensor<?x4xf32>
  %fe = tensor.from_elements %v, %v, %v : tensor<3xf32>
  %pd = tensor.pad %t low[1, %i] high[2, 0] {
  ^bb0(%a: index, %b: index):
    tensor.yield %v : f32
  } : tensor<8x16xf32> to tensor<11x?xf32>
  %pd2 = tensor.pad %t nofold low[0, 0] high[1, 1] {
  ^bb0(%a: index, %b: index):
    tensor.yield %v : f32
  } : tensor<8x16xf32> to tensor<9x17xf32>
  %cl = tensor.collapse_shape %t [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
  %ex = tensor.expand_shape %t [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %ex2 = tensor.expand_shape %d [[0, 1], [2]] output_shape [%i, 4, 16] : tensor<?x16xf32> into tensor<?x4x16xf32>
  %cc = tensor.concat dim(0) %t, %t : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  %cc2 = tensor.concat dim(1) %t, %d : (tensor<8x16xf32>, tensor<?x16xf32>) -> tensor<8x32xf32>
  %sc = tensor.empty() : tensor<f32>
  %sx = tensor.extract %sc[] : tensor<f32>
  return %u0 : tensor<8x16xf32>
}
