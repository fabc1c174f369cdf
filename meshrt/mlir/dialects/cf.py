"""The custom (pretty) forms of cf, affine and vector ops: one reader per op, registered with `_custom`."""

from __future__ import annotations

from .tensor import _conversion
from ..syntax.printer import ATTRIBUTE_KINDS, _array, _enum
from ..syntax.reader import _I1, _INDEX, _custom, _op
from ..ir import AffineMap


# cf -----------------------------------------------------------------------------------------------


def _successor_with_args(p):
    """``^bb1`` or ``^bb1(%a, %b : f32, i32)`` -> (block, [values])."""
    block = p.successor()
    if not p.accept("("):
        return block, []
    names = p.value_names()
    p.expect(":")
    types = p.type_list()
    p.expect(")")
    return block, p.resolve(names, types)


@_custom("cf.br")
def _cf_br(p, name, pos, nres):
    block, args = _successor_with_args(p)
    return _op(name, args, [], p.opt_attr_dict({}), successors=[block])


@_custom("cf.cond_br")
def _cf_cond_br(p, name, pos, nres):
    c = p.operand(_I1)
    p.expect(",")
    t, targs = _successor_with_args(p)
    p.expect(",")
    f, fargs = _successor_with_args(p)
    attrs = p.opt_attr_dict({"operandSegmentSizes": (1, len(targs), len(fargs))})
    return _op(name, [c] + targs + fargs, [], attrs, successors=[t, f])


@_custom("cf.assert")
def _cf_assert(p, name, pos, nres):
    c = p.operand(_I1)
    p.expect(",")
    msg = p.attribute(typed=False)
    return _op(name, [c], [], p.opt_attr_dict({"msg": msg}))


# affine ---------------------------------------------------------------------------------------------


def _map_operands(p):
    """``#map(%d0, %d1)[%s0]`` or ``affine_map<...>(...)[...]`` -> (AffineMap, dim names, symbol names)."""
    p.ws()
    pos = p.pos
    m = p.attribute(typed=False)
    if not isinstance(m, AffineMap):
        p.error(f"expected an affine map, found {m}", pos)
    p.expect("(")
    dims = p.value_names()
    p.expect(")")
    syms = []
    if p.accept("["):
        syms = p.value_names()
        p.expect("]")
    if len(dims) != m.dims or len(syms) != m.symbols:
        p.error(f"affine map {m} takes {m.dims} dims and {m.symbols} symbols, "
                f"got {len(dims)} and {len(syms)} operands", pos)
    return m, dims, syms


@_custom("affine.apply", "affine.min", "affine.max")
def _affine_apply(p, name, pos, nres):
    m, dims, syms = _map_operands(p)
    if name == "affine.apply" and len(m.results) != 1:
        p.error(f"'affine.apply' needs a map with one result, got {m}", pos)
    attrs = p.opt_attr_dict({"map": m})
    names = dims + syms
    return _op(name, p.resolve(names, [_INDEX] * len(names)), [_INDEX], attrs)


# vector (read so that a module using them parses; the executor names them unsupported) ---------------


@_custom("vector.constant_mask")
def _vector_constant_mask(p, name, pos, nres):
    sizes = p.array_attribute("mask_dim_sizes")
    attrs = p.opt_attr_dict({"mask_dim_sizes": sizes})
    p.expect(":")
    return _op(name, [], [p.type()], attrs)


@_custom("vector.broadcast")
def _vector_broadcast(p, name, pos, nres):
    return _conversion(p, name, "to")


@_custom("vector.multi_reduction")
def _vector_multi_reduction(p, name, pos, nres):
    p.expect("<")
    kind = p.ident("a combining kind")
    p.expect(">")
    p.expect(",")
    src = p.value_name()
    p.expect(",")
    acc = p.value_name()
    dims = p.array_attribute("reduction_dims")
    attrs = p.opt_attr_dict({"kind": kind, "reduction_dims": dims})
    p.expect(":")
    st = p.type()
    p.expect_keyword("to")
    rt = p.type()
    return _op(name, p.resolve([src, acc], [st, rt]), [rt], attrs)


@_custom("vector.mask")
def _vector_mask(p, name, pos, nres):
    names = [p.value_name()]
    if p.accept(","):
        names.append(p.value_name())  # the pass-through value
    region = p.region(dialect="vector")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    mask_t = p.type()
    results = []
    if p.accept("->"):
        results = p.type_list()
    for b in region.blocks:  # the custom form leaves out the terminator that yields the masked op's results
        ops = b.operations
        if not ops or ops[-1].name != "vector.yield":
            ops.append(_op("vector.yield", list(ops[-1].results) if ops else [], []))
    types = [mask_t] + results[:len(names) - 1]
    return _op(name, p.resolve(names, types), results, attrs, [region])


# the MLIR form of the attributes ----------------------------------------------------------------------

ATTRIBUTE_KINDS["cf.*"] = {"operandSegmentSizes": _array("i32")}
ATTRIBUTE_KINDS["vector.*"] = {"mask_dim_sizes": _array("i64"), "reduction_dims": _array("i64"),
                               "kind": _enum("vector", "kind")}
