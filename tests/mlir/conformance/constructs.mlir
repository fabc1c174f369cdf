// Constructs of LLVM 22's shard tests that meshrt once refused although mlir-opt
// accepts them, each in a program of its own (tests/test_mlir_conformance.py).
shard.grid @g3(shape = 3)
shard.grid @gdyn(shape = ?)
shard.grid @gdyn2(shape = ?x?)
shard.grid @gpriv(shape = 1) {sym_visibility = "private"}

// '?' result dims where the verifier can compute a static size: checked at run time
func.func @dynamic_result_dims(%a: tensor<3x6xi8>, %b: tensor<4xf32>) -> (tensor<3x?xi8>, tensor<?xf32>, tensor<?x6xi8>) {
  %0 = shard.all_to_all %a on @g3 split_axis = 1 concat_axis = 0 : tensor<3x6xi8> -> tensor<3x?xi8>
  %1 = shard.all_reduce %b on @g3 grid_axes = [0] : tensor<4xf32> -> tensor<?xf32>
  %2 = shard.all_gather %a on @g3 grid_axes = [0] gather_axis = 0 : tensor<3x6xi8> -> tensor<?x6xi8>
  return %0, %1, %2 : tensor<3x?xi8>, tensor<?xf32>, tensor<?x6xi8>
}

// a '?' operand dim with a static result dim of an op whose shapes need only be compatible
func.func @compatible_shapes(%b: tensor<?xf32>) -> tensor<4xf32> {
  %0 = shard.all_reduce %b on @gdyn grid_axes = [0] : tensor<?xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// split axes of a grid of dynamic shape are not checked against its rank (as upstream)
func.func @dynamic_grid_split_axes(%a: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = shard.sharding @gdyn split_axes = [[], [], [0, 1, 2]] : !shard.sharding
  %0 = shard.shard %a to %s : tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// %v#0 names the one result of a one-result op
func.func @hash_zero(%a: tensor<4xf32>) -> (tensor<4xf32>, index) {
  %0 = shard.all_reduce %a on @gdyn grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %1 = shard.process_linear_index on @gdyn : index
  return %0#0, %1#0 : tensor<4xf32>, index
}

// affine.apply / min / max, custom and generic form
#lin = affine_map<()[s0, s1, s2] -> (s0 * s1 + s2)>
func.func @affine(%i: index, %j: index, %k: index) -> (index, index, index, index) {
  %0 = affine.apply #lin()[%i, %j, %k]
  %1 = affine.min affine_map<(d0)[s0] -> (d0 floordiv 2, s0 mod 3, 7)>(%i)[%j]
  %2 = affine.max affine_map<(d0, d1) -> (d0 ceildiv 4, d1 - 2)>(%i, %k)
  %3 = "affine.apply"(%i, %k) <{map = affine_map<(d0)[s0] -> (d0 * 3 - s0)>}> : (index, index) -> index
  return %0, %1, %2, %3 : index, index, index, index
}

// the ops of ShardToMPI's vector test: read, named unsupported by the executor
func.func @vector_ops(%arg0: memref<4xf32>) {
  %mask = vector.constant_mask [8] : vector<8xi1>
  %zero = arith.constant 0.000000e+00 : f32
  %broadcast = vector.broadcast %zero : f32 to vector<8xf32>
  %reduction = vector.mask %mask {
    vector.multi_reduction <add>, %broadcast, %zero [0] : vector<8xf32> to f32
  } : vector<8xi1> -> f32
  return
}

func.func @private_grid(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = shard.all_reduce %a on @gpriv grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
