"""The custom forms of the ``memref`` and ``bufferization`` ops that bufferized programs (and
``mlir-opt --convert-shard-to-mpi``) print, the MLIR form of their attributes, and `memref_type`,
and `shaped` (a tensor type, or a memref type read by `meshrt.mlir.ir.memref_type`).

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%m: memref<4x4xf32>, %i: index) -> memref<2x2xf32, strided<[4, 1], offset: ?>> {
...   %s = memref.subview %m[%i, 1] [2, 2] [1, 1] : memref<4x4xf32> to memref<2x2xf32, strided<[4, 1], offset: ?>>
...   return %s : memref<2x2xf32, strided<[4, 1], offset: ?>>
... }''')
>>> op = m.functions()["f"].regions[0].entry.operations[0]
>>> op.attributes["operandSegmentSizes"], memref_type(op.results[0].type).shape
((1, 1, 0, 0), (2, 2))
"""

from __future__ import annotations

import re

from ..ir import UNIT, MemRef, TensorType, memref_type, shaped
from ..syntax.printer import ATTRIBUTE_KINDS, _array, _typed_int
from ..syntax.reader import _INDEX, _custom, _op
from .tensor import _mixed_list, _reassociation, _reassociation_text

__all__ = ["MemRef", "memref_type", "shaped", "strided_layout"]


def strided_layout(m: MemRef):
    """``(offset, strides)`` of a ``strided<[...], offset: ...>`` layout (None for ``?``), else None."""
    if m.layout is None or not m.layout.startswith("strided<"):
        return None
    inner = m.layout[len("strided<"):-1]
    mt = re.fullmatch(r"\[([^\]]*)\](?:,offset:([-\d?]+))?", inner)
    if not mt:
        return None
    conv = [None if s == "?" else int(s) for s in mt.group(1).split(",") if s]
    off = mt.group(2)
    return (0 if off is None else None if off == "?" else int(off)), conv


# memref ------------------------------------------------------------------------------------------------


@_custom("memref.alloc", "memref.alloca")
def _alloc(p, name, pos, nres):
    p.expect("(")
    dyn = p.value_names()
    p.expect(")")
    sym = []
    if p.accept("["):
        sym = p.value_names()
        p.expect("]")
    attrs = p.opt_attr_dict({})
    attrs["operandSegmentSizes"] = (len(dyn), len(sym))
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(dyn + sym, [_INDEX] * (len(dyn) + len(sym))), [t], attrs)


@_custom("memref.dealloc")
def _dealloc(p, name, pos, nres):
    m = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    return _op(name, p.resolve([m], [p.type()]), [], attrs)


@_custom("memref.subview")
def _subview(p, name, pos, nres):
    src = p.value_name()
    offs, do = _mixed_list(p)
    sizes, ds = _mixed_list(p)
    strides, dt = _mixed_list(p)
    attrs = p.opt_attr_dict({"static_offsets": offs, "static_sizes": sizes, "static_strides": strides})
    p.expect(":")
    st = p.type()
    p.expect_keyword("to")
    rt = p.type()
    dyn = do + ds + dt
    attrs["operandSegmentSizes"] = (1, len(do), len(ds), len(dt))
    return _op(name, p.resolve([src] + dyn, [st] + [_INDEX] * len(dyn)), [rt], attrs)


@_custom("memref.copy")
def _copy(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    ta = p.type()
    p.expect_keyword("to")
    tb = p.type()
    return _op(name, p.resolve([a, b], [ta, tb]), [], attrs)


def _indices(p):
    p.expect("[")
    idx = p.value_names()
    p.expect("]")
    return idx


@_custom("memref.load")
def _load(p, name, pos, nres):
    m = p.value_name()
    idx = _indices(p)
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    mt = memref_type(t)
    if mt is None:
        p.error(f"'memref.load' expects a ranked memref type, found {t}")
    return _op(name, p.resolve([m] + idx, [t] + [_INDEX] * len(idx)), [mt.element], attrs)


@_custom("memref.store")
def _store(p, name, pos, nres):
    v = p.value_name()
    p.expect(",")
    m = p.value_name()
    idx = _indices(p)
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    mt = memref_type(t)
    if mt is None:
        p.error(f"'memref.store' expects a ranked memref type, found {t}")
    return _op(name, p.resolve([v, m] + idx, [mt.element, t] + [_INDEX] * len(idx)), [], attrs)


@_custom("memref.cast", "bufferization.to_tensor", "bufferization.to_buffer", "bufferization.to_memref")
def _conversion(p, name, pos, nres):
    a = p.value_name()
    attrs = {}
    for flag in ("read_only", "restrict", "writable"):
        if p.keyword(flag):
            attrs[flag] = UNIT
    p.opt_attr_dict(attrs)
    p.expect(":")
    src = p.type()
    if p.keyword("to"):
        dst = p.type()
    elif name == "bufferization.to_tensor":  # the older spelling: the tensor type is implied
        m = memref_type(src)
        if m is None:
            p.error(f"'{name}' expects a ranked memref, found {src}")
        dst = TensorType(m.shape, m.element)
    else:
        p.expect_keyword("to")
    if name == "bufferization.to_memref":
        name = "bufferization.to_buffer"  # LLVM 21 renamed it
    return _op(name, p.resolve([a], [src]), [dst], attrs)


@_custom("memref.dim")
def _dim(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    i = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a, i], [t, _INDEX]), [_INDEX], attrs)


@_custom("memref.collapse_shape", "memref.expand_shape")
def _reshape(p, name, pos, nres):
    src = p.value_name()
    attrs = {"reassociation": _reassociation(p)}
    dyn = []
    if name == "memref.expand_shape":
        p.expect_keyword("output_shape")
        static, dyn = _mixed_list(p)
        attrs["static_output_shape"] = static
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("into")
    rt = p.type()
    return _op(name, p.resolve([src] + dyn, [st] + [_INDEX] * len(dyn)), [rt], attrs)


@_custom("bufferization.alloc_tensor")
def _alloc_tensor(p, name, pos, nres):
    p.expect("(")
    dyn = p.value_names()
    p.expect(")")
    copy = []
    if p.keyword("copy"):
        p.expect("(")
        copy = [p.value_name()]
        p.expect(")")
    attrs = p.opt_attr_dict({})
    attrs["operandSegmentSizes"] = (len(dyn), len(copy), 0)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(dyn + copy, [_INDEX] * len(dyn) + [t] * len(copy)), [t], attrs)


@_custom("bufferization.materialize_in_destination")
def _materialize(p, name, pos, nres):
    a = p.value_name()
    p.expect_keyword("in")
    attrs = {}
    for flag in ("restrict", "writable"):
        if p.keyword(flag):
            attrs[flag] = UNIT
    b = p.value_name()
    p.opt_attr_dict(attrs)
    p.expect(":")
    ft = p.type()
    ins = list(getattr(ft, "inputs", ()))
    if len(ins) != 2:
        p.error("'bufferization.materialize_in_destination' expects a type '(source, dest) -> result'")
    return _op(name, p.resolve([a, b], ins), list(ft.results), attrs)


ATTRIBUTE_KINDS["memref.*"] = {
    "static_offsets": _array("i64"), "static_sizes": _array("i64"), "static_strides": _array("i64"),
    "static_output_shape": _array("i64"), "operandSegmentSizes": _array("i32"),
    "reassociation": _reassociation_text, "alignment": _typed_int("i64"),
}
ATTRIBUTE_KINDS["bufferization.*"] = {"operandSegmentSizes": _array("i32")}
