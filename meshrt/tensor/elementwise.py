"""One sharding rule for elementwise ops between tensors of different shardings, replicated
tensors, numpy arrays and scalars, with numpy's broadcasting on the global shapes.

The rule (Shardy's and DTensor's propagation, reduced to what an elementwise op needs):

* the result has numpy's broadcast shape of the operands' global shapes;
* its sharding is one of the operands' of that full shape (``out=``'s if given:
  an in-place op keeps its target's sharding), the one whose choice moves the
  fewest elements (``plan_reshard``'s count; ties go to the first operand);
  where no operand has the full shape (``x[:, None] - x[None, :]``), each
  tensor proposes its own split dims lifted to the result's shape
  (`lifted_sharding`) and the cheapest proposal wins, ties to the larger
  operand;
* each operand is then brought to the result's blocks, aligned from the right
  as numpy aligns shapes: one already laid out so is used as it is
  (``local``); a numpy array (the same global array on every process) or a
  fully replicated tensor is sliced locally (``slice``: no communication; a
  broadcast dim of size 1 is kept whole); anything else is resharded to the
  result's split of its dims (``reshard``, its partial values reduced on the
  way).

`plan_elementwise` is pure (shapes and shardings in, a plan out) and works on
an `AbstractMesh` of any size; `explain_op(np.add, a, b)` prints it for real
operands.

>>> from meshrt import AbstractMesh, Sharding
>>> m = AbstractMesh((2, 2))
>>> rows, cols = Sharding(m, [[0]]), Sharding(m, [[], [0]])
>>> plan = plan_elementwise([Operand.tensor(rows, (8, 6)), Operand.array((6,)), Operand.tensor(cols, (8, 6))])
>>> [a.action for a in plan.actions], plan.result_sharding == rows
(['local', 'slice', 'reshard'], True)
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ShardingError
from ..reshard import plan_reshard
from ..sharding.spec import Sharding

__all__ = ["Operand", "OperandAction", "ElementwisePlan", "plan_elementwise", "aligned_sharding", "lifted_sharding",
           "explain_op"]


@dataclass(frozen=True)
class Operand:
    """What the planner needs of one operand: ``kind`` is ``tensor``, ``array`` or ``scalar``."""

    kind: str
    shape: tuple = ()
    sharding: Sharding | None = None

    @classmethod
    def tensor(cls, sharding: Sharding, shape) -> "Operand":
        return cls("tensor", tuple(shape), sharding)

    @classmethod
    def array(cls, shape) -> "Operand":
        return cls("array", tuple(shape))

    @property
    def replicated(self) -> bool:
        return self.kind != "tensor" or not (any(self.sharding.split_axes) or self.sharding.is_partial)


@dataclass(frozen=True)
class OperandAction:
    """How one operand reaches the result's blocks: ``local``, ``slice``, ``reshard`` or ``scalar``."""

    action: str
    target: Sharding | None = None
    elements_moved: int = 0


@dataclass(frozen=True)
class ElementwisePlan:
    """The result's global shape and sharding, and one `OperandAction` per operand."""

    result_shape: tuple
    result_sharding: Sharding
    actions: tuple
    operands: tuple

    @property
    def elements_moved(self) -> int:
        return sum(a.elements_moved for a in self.actions)

    def __str__(self):
        lines = [f"elementwise result {self.result_shape} sharded <{self.result_sharding}>"]
        for i, (op, a) in enumerate(zip(self.operands, self.actions)):
            what = ("scalar" if op.kind == "scalar" else f"numpy array {op.shape}" if op.kind == "array"
                    else f"tensor {op.shape} <{op.sharding}>")
            how = {"local": "used as it is (no communication)",
                   "slice": "sliced locally to the result's blocks (no communication)",
                   "scalar": "broadcast (no communication)",
                   "reshard": f"resharded to <{a.target}>: {a.elements_moved} elements move"}[a.action]
            lines.append(f"  operand {i}: {what}: {how}")
        lines.append(f"  elements moved between processes: {self.elements_moved}")
        return "\n".join(lines)


def aligned_sharding(result: Sharding, result_shape, shape) -> Sharding:
    """The sharding an operand of global ``shape`` needs so that its blocks line up with ``result``'s
    (right-aligned dims; a broadcast dim of size 1 and a missing dim are not split; no halos).

    >>> from meshrt import AbstractMesh
    >>> s = Sharding(AbstractMesh((2, 3)), [[0], [1]])
    >>> str(aligned_sharding(s, (4, 6), (6,)))
    'shard.sharding @mesh split_axes = [[1]]'
    """
    lead = len(result_shape) - len(shape)
    offsets_all = result.dim_offsets(result_shape) if result.sharded_dims_offsets else None
    split, offsets = [], []
    for j, n in enumerate(shape):
        d = lead + j
        axes = result.dim_axes(d) if n == result_shape[d] else ()
        split.append(list(axes))
        if axes and offsets_all is not None:
            offsets.append(list(offsets_all[d]))
    while split and not split[-1]:
        split.pop()
    uneven = bool(offsets) and offsets_all is not None
    flat = [x for o in offsets for x in o] if uneven else None
    return Sharding(result.mesh, split, sharded_dims_offsets=flat)


def lifted_sharding(s: Sharding, shape, result_shape) -> Sharding:
    """The result sharding an operand of global ``shape`` proposes for a broadcast to ``result_shape``:
    its split dims where it has the result's size (right-aligned), nothing else split; no halos, not partial.

    >>> from meshrt import AbstractMesh
    >>> col = Sharding(AbstractMesh((2,)), [[0]])              # x[:, None], shape (9, 1)
    >>> str(lifted_sharding(col, (9, 1), (9, 9)))
    'shard.sharding @mesh split_axes = [[0]]'
    >>> str(lifted_sharding(col.replace(split_axes=[[], [0]]), (1, 9), (4, 9, 9)))
    'shard.sharding @mesh split_axes = [[], [], [0]]'
    """
    lead = len(result_shape) - len(shape)
    offsets_all = s.dim_offsets(shape) if s.sharded_dims_offsets else None
    split, offsets = [[] for _ in result_shape], []
    for j, n in enumerate(shape):
        if s.dim_axes(j) and n == result_shape[lead + j]:
            split[lead + j] = list(s.dim_axes(j))
    for j, n in enumerate(shape):
        if split[lead + j] and offsets_all is not None:
            offsets.extend(offsets_all[j])
    while split and not split[-1]:
        split.pop()
    if s.sharded_dims_offsets and not offsets:
        offsets = None
    return Sharding(s.mesh, split, sharded_dims_offsets=offsets or None)


def _strip_halos(s: Sharding) -> Sharding:
    return s.replace(halo_sizes=()) if s.halo_sizes else s


def _broadcast_shape(name, operands) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*(op.shape for op in operands)))
    except ValueError:
        shapes = " ".join(str(op.shape) for op in operands)
        raise ShardingError(f"{name}: operands could not be broadcast together with global shapes {shapes}") from None


def _action(op: Operand, result: Sharding, shape) -> OperandAction:
    if op.kind == "scalar":
        return OperandAction("scalar")
    want = aligned_sharding(result, shape, op.shape)
    if op.kind == "array":
        return OperandAction("slice")
    if not op.sharding.is_partial and _strip_halos(op.sharding) == want:
        return OperandAction("local")
    if op.replicated:
        return OperandAction("slice")
    if op.sharding.mesh != result.mesh:
        raise ShardingError(f"operands are on different meshes: {op.sharding.mesh!r} and {result.mesh!r}")
    moved = plan_reshard(op.sharding, want, op.shape).elements_moved
    return OperandAction("reshard", want, moved)


def plan_elementwise(operands, out_sharding: Sharding | None = None, name: str = "elementwise",
                     out_shape=None) -> ElementwisePlan:
    """The plan for an elementwise op over ``operands`` (`Operand` each); see the module docstring.

    With ``out=`` (``out_sharding`` and ``out_shape``) the operands broadcast to the target's shape, as
    numpy's ``out=`` does.  Plans are cached per (operands, target): a loop pays for planning once."""
    key = (tuple(operands), out_sharding, name, None if out_shape is None else tuple(out_shape))
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 1024:
            _PLANS.clear()
        plan = _PLANS[key] = _plan(*key)
    return plan


_PLANS: dict = {}


def _plan(operands, out_sharding, name, out_shape) -> ElementwisePlan:
    shaped = [op for op in operands if op.kind != "scalar"]
    if out_shape is not None:
        shaped.append(Operand.array(out_shape))
    shape = _broadcast_shape(name, shaped)
    if out_shape is not None and shape != tuple(out_shape):
        raise ShardingError(f"{name}: out has global shape {tuple(out_shape)}; the operands broadcast to {shape}")
    if out_sharding is not None:
        candidates = [out_sharding]
    else:
        tensors = [op for op in operands if op.kind == "tensor"]
        full = [op for op in tensors if op.shape == shape]
        seen, candidates = set(), []
        if full:  # an operand of the result's shape: the result takes one of theirs (halos kept)
            for op in full:
                s = op.sharding.replace(partial_axes=()) if op.sharding.is_partial else op.sharding
                if s not in seen:
                    seen.add(s)
                    candidates.append(s)
        else:  # a shape no operand has (x[:, None] - x[None, :]): each tensor proposes its split dims lifted
            # to the result's shape, the larger operands first (a tie keeps the larger one's layout)
            for op in sorted(tensors, key=lambda op: -math.prod(op.shape)):
                s = lifted_sharding(op.sharding, op.shape, shape)
                if s not in seen:
                    seen.add(s)
                    candidates.append(s)
        if not candidates:
            raise ShardingError(f"{name}: no tensor operand")
    best = None
    for result in candidates:
        actions = tuple(_action(op, result, shape) for op in operands)
        cost = sum(a.elements_moved for a in actions)
        if best is None or cost < best[0]:
            best = (cost, result, actions)
    _, result, actions = best
    return ElementwisePlan(shape, result, actions, operands)


def describe_operand(x, tensor_type) -> Operand:
    if isinstance(x, tensor_type):
        return Operand.tensor(x.sharding, x.global_shape)
    if isinstance(x, np.ndarray) and x.ndim > 0:
        return Operand.array(x.shape)
    return Operand("scalar")


def array_fingerprint(a: np.ndarray) -> str:
    """A text naming ``a``'s dtype, shape and contents, for ``MESHRT_CHECK``'s agreement."""
    data = np.ascontiguousarray(a)
    return f"{data.dtype}{data.shape}:{hashlib.sha1(data.view(np.uint8).reshape(-1)).hexdigest()}"


def explain_op(ufunc, *operands, out=None, **kwargs) -> ElementwisePlan:
    """What ``ufunc(*operands, out=out)`` moves between processes, as a printable plan.

    The elementwise sharding rule of the module docstring, applied to real
    operands: the result takes the operand sharding that moves the fewest
    elements (``out=``'s if given); numpy arrays and replicated tensors are
    sliced locally, other tensors are resharded.  Nothing is computed or sent.

    Parameters
    ----------
    ufunc : numpy.ufunc or LazyTensor
        The elementwise operation, e.g. ``np.add``; or a deferred expression,
        then ``explain_op(expr, target, key)`` is `explain_fused`'s text.
    *operands : DistributedTensor, numpy.ndarray or scalar
        The operands as they would be passed to ``ufunc``.
    out : DistributedTensor or tuple of DistributedTensor, optional
        The target of an in-place op; the result keeps its sharding.
    **kwargs
        A non-elementwise function's own keywords (``explain_op(np.fft.fftn,
        t, axes=(0, 1))`` prints the FFT's stages, see ``meshrt.fft``).

    Returns
    -------
    ElementwisePlan
        The result's shape and sharding and one action per operand; ``str`` of
        it reads as below.

    Raises
    ------
    ShardingError
        The global shapes do not broadcast together, ``out`` does not have the
        result's shape, or the tensors are on different meshes.

    See Also
    --------
    explain_reshard, explain_matmul

    Examples
    --------
    At one process nothing moves, but the plan names what would:

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> mesh = Mesh((-1,), ("x",))
    >>> a = DistributedTensor.from_global(np.ones((4, 3)), Sharding(mesh, [["x"]]))
    >>> b = DistributedTensor.from_global(np.ones((4, 3)), Sharding(mesh, [[], ["x"]]))
    >>> print(explain_op(np.add, a, b))
    elementwise result (4, 3) sharded <shard.sharding @mesh split_axes = [[0]]>
      operand 0: tensor (4, 3) <shard.sharding @mesh split_axes = [[0]]>: used as it is (no communication)
      operand 1: tensor (4, 3) <shard.sharding @mesh split_axes = [[], [0]]>: resharded to <shard.sharding @mesh split_axes = [[0]]>: 0 elements move
      elements moved between processes: 0
    """
    from .distributed_tensor import DistributedTensor
    from .dispatch import ABOVE

    if isinstance(ufunc, DistributedTensor) and ABOVE.lazy is not None:  # explain_op(expr[, target, key])
        return ABOVE.lazy.explain_fused(ufunc, *operands)
    from .dispatch import EXPLAINERS

    if ufunc in EXPLAINERS:  # explain_op(np.fft.fftn, t, axes=...): the function's own plan
        return EXPLAINERS[ufunc](*operands, **({} if out is None else {"out": out}), **kwargs)
    if kwargs:
        raise TypeError(f"explain_op: unexpected keyword argument(s) {sorted(kwargs)} for np.{ufunc.__name__}")
    ops = [describe_operand(x, DistributedTensor) for x in operands]
    target = out[0] if isinstance(out, tuple) else out
    return plan_elementwise(ops, None if target is None else target.sharding, f"np.{ufunc.__name__}",
                            None if target is None else target.global_shape)
