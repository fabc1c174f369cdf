// Ops with no dedicated reader, in the functional custom form many dialects print (tosa here).
func.func @t(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %z: tensor<1xf32>) -> tensor<2x3xf32> {
  %0 = tosa.abs %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = tosa.add %0, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = tosa.negate %1, %z, %z : (tensor<2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %3 = tosa.reduce_sum %2 {axis = 1 : i32} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %4 = tosa.transpose %2 {perms = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %5 = "tosa.const"() {values = dense<1.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %6 = tosa.sigmoid %5 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = tosa.tanh %6 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %7 : tensor<2x3xf32>
}
