"""MLIR's generic syntax, naming no dialect: the lexer, types and attributes, the reader, the printer.

- `lexer`: tokens and source locations.
- `attributes`: the reader of types and attribute values (builtin forms, dialect ones kept opaque).
- `reader`: the structure of a file (top level, SSA scopes, regions), the generic form of any op, and
  the registries a dialect fills: `reader._custom` (an op's custom form).
- `printer`: the generic form of any op, ``mlir-opt`` readable; `printer.ATTRIBUTE_KINDS`, which the
  dialects fill with the MLIR form of their attributes.

The dialects (`meshrt.mlir.dialects`) register their forms here; nothing here imports them.

>>> from meshrt.mlir.syntax.reader import _Parser
>>> [op.name for op in _Parser('"my.op"() : () -> ()', "<string>").top_level()]
['my.op']
"""
