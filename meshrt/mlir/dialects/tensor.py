"""The custom (pretty) forms of tensor dialect ops: one reader per op, registered with `_custom`.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%t: tensor<8x8xf32>) -> tensor<2x4xf32> {
...   %0 = tensor.extract_slice %t[0, 4] [2, 4] [1, 1] : tensor<8x8xf32> to tensor<2x4xf32>
...   return %0 : tensor<2x4xf32>
... }''')
>>> a = m.functions()["f"].regions[0].entry.operations[0].attributes
>>> a["static_offsets"], a["static_sizes"], a["static_strides"]
((0, 4), (2, 4), (1, 1))
"""

from __future__ import annotations

from ..syntax.printer import ATTRIBUTE_KINDS, _array, _typed_int
from ..syntax.reader import _INDEX, _custom, _op
from ..ir import DYNAMIC, UNIT


# tensor -------------------------------------------------------------------------------------------


def _mixed_list(p, open_="[", close="]"):
    """``[0, %a, 4]`` -> (static tuple with DYNAMIC for values, [value names])."""
    p.expect(open_)
    static, dyn = [], []
    if not p.accept(close):
        while True:
            if p.peek("%"):
                dyn.append(p.value_name())
                static.append(DYNAMIC)
            else:
                static.append(p.integer())
            if p.accept(close):
                break
            p.expect(",", f"',' or '{close}'")
    return tuple(static), dyn


@_custom("tensor.empty")
def _tensor_empty(p, name, pos, nres):
    p.expect("(")
    names = p.value_names()
    p.expect(")")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(names, [_INDEX] * len(names)), [t], attrs)


@_custom("tensor.extract")
def _tensor_extract(p, name, pos, nres):
    src = p.value_name()
    p.expect("[")
    idx = p.value_names()
    p.expect("]")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.tensor_type()
    return _op(name, p.resolve([src] + idx, [t] + [_INDEX] * len(idx)), [t.element], attrs)


@_custom("tensor.insert")
def _tensor_insert(p, name, pos, nres):
    v = p.value_name()
    p.expect_keyword("into")
    dst = p.value_name()
    p.expect("[")
    idx = p.value_names()
    p.expect("]")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.tensor_type()
    return _op(name, p.resolve([v, dst] + idx, [t.element, t] + [_INDEX] * len(idx)), [t], attrs)


def _slice_lists(p):
    offs, doffs = _mixed_list(p)
    sizes, dsizes = _mixed_list(p)
    strides, dstrides = _mixed_list(p)
    attrs = {"static_offsets": offs, "static_sizes": sizes, "static_strides": strides}
    return attrs, doffs, dsizes, dstrides


@_custom("tensor.extract_slice")
def _extract_slice(p, name, pos, nres):
    src = p.value_name()
    attrs, do, ds, dt = _slice_lists(p)
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("to")
    rt = p.type()
    dyn = do + ds + dt
    attrs["operandSegmentSizes"] = (1, len(do), len(ds), len(dt))
    return _op(name, p.resolve([src] + dyn, [st] + [_INDEX] * len(dyn)), [rt], attrs)


@_custom("tensor.insert_slice")
def _insert_slice(p, name, pos, nres):
    src = p.value_name()
    p.expect_keyword("into")
    dst = p.value_name()
    attrs, do, ds, dt = _slice_lists(p)
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("into")
    dt_ = p.type()
    dyn = do + ds + dt
    attrs["operandSegmentSizes"] = (1, 1, len(do), len(ds), len(dt))
    return _op(name, p.resolve([src, dst] + dyn, [st, dt_] + [_INDEX] * len(dyn)), [dt_], attrs)


def _conversion(p, name, separator):
    """``%a attr-dict : T0 <separator> T1``: one operand of type T0, one result of type T1."""
    a = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    src = p.type()
    if separator == "to":
        p.expect_keyword("to")
    else:
        p.expect(separator)
    dst = p.type()
    return _op(name, p.resolve([a], [src]), [dst], attrs)


@_custom("tensor.cast", "tensor.bitcast")
def _tensor_cast(p, name, pos, nres):
    return _conversion(p, name, "to")


@_custom("tensor.dim")
def _tensor_dim(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    i = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a, i], [t, _INDEX]), [_INDEX], attrs)


@_custom("tensor.splat")
def _tensor_splat(p, name, pos, nres):
    v = p.value_name()
    dyn = []
    if p.accept("["):
        dyn = p.value_names()
        p.expect("]")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.tensor_type()
    return _op(name, p.resolve([v] + dyn, [t.element] + [_INDEX] * len(dyn)), [t], attrs)


@_custom("tensor.from_elements")
def _from_elements(p, name, pos, nres):
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.tensor_type()
    return _op(name, p.resolve(names, [t.element] * len(names)), [t], attrs)


@_custom("tensor.pad")
def _tensor_pad(p, name, pos, nres):
    src = p.value_name()
    attrs = {}
    if p.keyword("nofold"):
        attrs["nofold"] = UNIT
    p.expect_keyword("low")
    low, dlow = _mixed_list(p)
    p.expect_keyword("high")
    high, dhigh = _mixed_list(p)
    region = p.region(dialect="tensor")
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("to")
    rt = p.type()
    attrs.update(static_low=low, static_high=high, operandSegmentSizes=(1, len(dlow), len(dhigh)))
    dyn = dlow + dhigh
    return _op(name, p.resolve([src] + dyn, [st] + [_INDEX] * len(dyn)), [rt], attrs, [region])


def _reassociation(p):
    p.expect("[")
    groups = []
    if not p.accept("]"):
        while True:
            p.expect("[")
            g = []
            if not p.accept("]"):
                while True:
                    g.append(p.integer())
                    if p.accept("]"):
                        break
                    p.expect(",")
            groups.append(tuple(g))
            if p.accept("]"):
                break
            p.expect(",")
    return tuple(groups)


@_custom("tensor.collapse_shape", "tensor.expand_shape")
def _reshape(p, name, pos, nres):
    src = p.value_name()
    attrs = {"reassociation": _reassociation(p)}
    dyn = []
    if name == "tensor.expand_shape":
        p.expect_keyword("output_shape")
        static, dyn = _mixed_list(p)
        attrs["static_output_shape"] = static
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("into")
    rt = p.type()
    return _op(name, p.resolve([src] + dyn, [st] + [_INDEX] * len(dyn)), [rt], attrs)


@_custom("tensor.concat")
def _concat(p, name, pos, nres):
    p.expect_keyword("dim")
    p.expect("(")
    dim = p.integer("a dimension")
    p.expect(")")
    names = p.value_names()
    attrs = p.opt_attr_dict({"dim": dim})
    p.expect(":")
    ft = p.function_type()
    return _op(name, p.resolve(names, list(ft.inputs)), list(ft.results), attrs)


@_custom("tensor.yield", "linalg.yield", "scf.yield")
def _yield(p, name, pos, nres):
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    return _op(name, p.resolve(names, types), [], attrs)


# the MLIR form of the attributes ----------------------------------------------------------------------


def _reassociation_text(v, op):
    return "[" + ", ".join("[" + ", ".join(f"{int(x)} : i64" for x in g) + "]" for g in v) + "]"


ATTRIBUTE_KINDS["tensor.*"] = {
    "static_offsets": _array("i64"), "static_sizes": _array("i64"), "static_strides": _array("i64"),
    "static_low": _array("i64"), "static_high": _array("i64"), "static_output_shape": _array("i64"),
    "operandSegmentSizes": _array("i32"), "reassociation": _reassociation_text, "dim": _typed_int("i64"),
}
