// scf, func and cf (generic form mixed in) ops.
func.func private @decl(f32, tensor<4xf32>) -> f32
func.func @callee(%x: f32 {my.arg}, %y: f32) -> (f32 {my.res}, f32) {
  return %x, %y : f32, f32
}
func.func @scf(%c: i1, %n: index, %x: f32, %t: tensor<4xf32>) -> (f32, tensor<4xf32>) attributes {my.attr = 3 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = func.call @callee(%x, %x) : (f32, f32) -> (f32, f32)
  %d = call @decl(%r#0, %t) : (f32, tensor<4xf32>) -> f32
  %if:2 = scf.if %c -> (f32, tensor<4xf32>) {
    scf.yield %x, %t : f32, tensor<4xf32>
  } else {
    %y = arith.addf %x, %d : f32
    scf.yield %y, %t : f32, tensor<4xf32>
  }
  scf.if %c {
    %z = arith.mulf %x, %x : f32
  }
  scf.if %c {
  } else {
    %z = arith.mulf %x, %x : f32
  }
  %for:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x, %tt = %t) -> (f32, tensor<4xf32>) {
    %q = arith.addf %acc, %acc : f32
    %e = tensor.insert %q into %tt[%i] : tensor<4xf32>
    scf.yield %q, %e : f32, tensor<4xf32>
  }
  scf.for %i = %c0 to %n step %c1 {
    %q = arith.addf %x, %x : f32
  }
  %ci = arith.constant 3 : i32
  %ci0 = arith.constant 0 : i32
  %ci1 = arith.constant 1 : i32
  scf.for unsigned %k = %ci0 to %ci step %ci1 : i32 {
  }
  %w:2 = scf.while (%a = %c0, %b = %x) : (index, f32) -> (index, f32) {
    %lt = arith.cmpi slt, %a, %n : index
    scf.condition(%lt) %a, %b : index, f32
  } do {
  ^bb0(%a: index, %b: f32):
    %a1 = arith.addi %a, %c1 : index
    %b1 = arith.addf %b, %b : f32
    scf.yield %a1, %b1 : index, f32
  }
  %er = scf.execute_region -> f32 {
    scf.yield %x : f32
  }
  "cf.cond_br"(%c)[^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (i1) -> ()
^bb1:
  "cf.br"(%x)[^bb3] : (f32) -> ()
^bb2:
  "cf.br"(%w#1)[^bb3] : (f32) -> ()
^bb3(%phi: f32):
  %ucc = builtin.unrealized_conversion_cast %phi : f32 to i32
  %ucc2:2 = builtin.unrealized_conversion_cast %phi, %ucc : f32, i32 to f64, i64
  return %for#0, %if#1 : f32, tensor<4xf32>
}

func.func @cf(%c: i1, %x: f32, %y: f32) -> f32 {
  cf.assert %c, "c must hold"
  cf.cond_br %c, ^bb1(%x : f32), ^bb2
^bb1(%a: f32):
  cf.br ^bb3(%a, %y : f32, f32)
^bb2:
  cf.br ^bb3(%y, %x : f32, f32)
^bb3(%p: f32, %q: f32):
  return %p : f32
}
