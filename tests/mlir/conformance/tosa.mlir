// The tosa ops meshrt runs (the subset LLVM's shard tests use), one function per op,
// in the syntax mlir-opt 22 reads.  tests/test_mlir_conformance.py runs each against
// numpy written independently.
func.func @abs(%a: tensor<2x3xi8>) -> tensor<2x3xi8> {
  %0 = tosa.abs %a : (tensor<2x3xi8>) -> tensor<2x3xi8>
  return %0 : tensor<2x3xi8>
}
func.func @add(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.add %a, %b : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @add_wraps(%a: tensor<4xi8>, %b: tensor<4xi8>) -> tensor<4xi8> {
  %0 = tosa.add %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}
func.func @sub(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %0 = tosa.sub %a, %b : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}
func.func @mul(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.mul %a, %b, %shift : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<1xi8>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @mul_shift(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %shift = "tosa.const"() <{values = dense<2> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.mul %a, %b, %shift : (tensor<4xi32>, tensor<4xi32>, tensor<1xi8>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @negate(%a: tensor<2x3xf32>, %zin: tensor<1xf32>, %zout: tensor<1xf32>) -> tensor<2x3xf32> {
  %0 = tosa.negate %a, %zin, %zout : (tensor<2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @negate_i8(%a: tensor<4xi8>) -> tensor<4xi8> {
  %z = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.negate %a, %z, %z : (tensor<4xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}
func.func @exp(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.exp %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @log(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.log %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @tanh(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %0 = tosa.tanh %a : (tensor<2x3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
func.func @sigmoid(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.sigmoid %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @rsqrt(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.rsqrt %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @clamp(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.clamp %a {min_val = -5.000000e-01 : f32, max_val = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @clamp_i8(%a: tensor<4xi8>) -> tensor<4xi8> {
  %0 = tosa.clamp %a {min_val = -3 : i8, max_val = 7 : i8} : (tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}
func.func @maximum(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.maximum %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @minimum(%a: tensor<2x3xi32>, %b: tensor<1x3xi32>) -> tensor<2x3xi32> {
  %0 = tosa.minimum %a, %b : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}
func.func @reduce_sum(%a: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %0 = tosa.reduce_sum %a {axis = 1 : i32} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}
func.func @reduce_max(%a: tensor<2x3xi32>) -> tensor<1x3xi32> {
  %0 = tosa.reduce_max %a {axis = 0 : i32} : (tensor<2x3xi32>) -> tensor<1x3xi32>
  return %0 : tensor<1x3xi32>
}
func.func @reshape(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %s = tosa.const_shape {values = dense<[3, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %0 = tosa.reshape %a, %s : (tensor<2x3xf32>, !tosa.shape<2>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
func.func @transpose(%a: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = tosa.transpose %a {perms = array<i32: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}
func.func @const() -> tensor<2x2xf32> {
  %0 = "tosa.const"() <{values = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %a, %b, %z, %z : (tensor<2x3x4xf32>, tensor<2x4x5xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}
func.func @matmul_i8(%a: tensor<1x2x3xi8>, %b: tensor<1x3x2xi8>) -> tensor<1x2x2xi32> {
  %za = "tosa.const"() <{values = dense<1> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zb = "tosa.const"() <{values = dense<-2> : tensor<1xi8>}> : () -> tensor<1xi8>
  %0 = tosa.matmul %a, %b, %za, %zb : (tensor<1x2x3xi8>, tensor<1x3x2xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x2xi32>
  return %0 : tensor<1x2x2xi32>
}
