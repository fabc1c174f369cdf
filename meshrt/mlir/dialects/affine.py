"""The ``affine`` dialect's custom forms (``apply``, ``min``, ``max`` of a map on index operands): one
reader per op, registered with `_custom` (see `meshrt.mlir.syntax.reader`).

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%i: index) -> index {
...   %0 = affine.apply affine_map<(d0) -> (d0 * 4 + 1)>(%i)
...   return %0 : index
... }''')
>>> str(m.functions()["f"].regions[0].entry.operations[0].attributes["map"])
'affine_map<(d0) -> ((d0 * 4) + 1)>'
"""

from __future__ import annotations

from ..ir import AffineMap
from ..syntax.reader import _INDEX, _custom, _op


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
