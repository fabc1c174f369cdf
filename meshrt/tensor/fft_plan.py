"""Distributed FFTs planned as local transforms between data moves: pure, cached, no MPI.

A multi-dimensional FFT is a product of 1-D transforms, one per axis, and a 1-D transform needs its
axis whole on a process.  `plan_fft` takes the passes numpy makes (``np.fft.rfftn``: a real-to-complex
pass over the last axis, then complex passes over the others) and groups them into stages: every pass
whose axis is local now runs at once; then the mesh axes splitting one remaining axis move to the
nearest dim that no remaining pass needs (a done or untransformed dim), which is one ``all_to_all``
of the reshard planner for a slab or a pencil, and the next stage runs.  The result keeps the layout
of the last stage (no move back: the "transposed output" of FFTW-MPI and mpi4py-fft), and the same
nearest-dim rule run on the inverse transform moves the data back to the original layout:

>>> from meshrt import AbstractMesh, Sharding
>>> mesh = AbstractMesh((2, 2), ("x", "y"))
>>> plan = plan_fft("fftn", (8, 8, 8), Sharding(mesh, [["x"], ["y"]]), np.dtype(complex))
>>> print(plan.result_sharding)
shard.sharding @mesh split_axes = [[], [0], [1]]
>>> back = plan_fft("ifftn", (8, 8, 8), plan.result_sharding, np.dtype(complex))
>>> back.result_sharding == Sharding(mesh, [["x"], ["y"]])
True
>>> [len(s.passes) for s in plan.stages], plan.elements_moved
([1, 1, 1], 512)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..reshard import ReshardPlan, plan_reshard
from ..sharding.spec import Sharding

__all__ = ["FFTPass", "FFTStage", "FFTPlan", "plan_fft", "passes_of"]

#: pass kinds: a complex transform, and the real <-> Hermitian ones (their input or output is real)
C2C, R2C, C2R, HFFT, IHFFT = "c2c", "r2c", "c2r", "hfft", "ihfft"
_REAL_INPUT = (R2C, IHFFT)   # must run first: only the original data is real
_REAL_OUTPUT = (C2R, HFFT)   # must run last: after it the data is real


@dataclass(frozen=True)
class FFTPass:
    """One 1-D transform: ``kind`` along ``axis`` to ``n`` output points (``inverse``: the backward one)."""

    kind: str
    axis: int
    n: int
    inverse: bool = False

    def length_after(self, before: int) -> int:
        return self.n // 2 + 1 if self.kind in (R2C, IHFFT) else self.n

    def __str__(self):
        name = {C2C: "ifft" if self.inverse else "fft", R2C: "rfft", C2R: "irfft", HFFT: "hfft",
                IHFFT: "ihfft"}[self.kind]
        return f"{name}(axis={self.axis}, n={self.n})"


@dataclass(frozen=True)
class FFTStage:
    """A data move (``reshard``, None when the data stays) and then ``passes`` on local axes.

    ``sharding`` is the layout the passes run in; ``shape`` the global shape before them.
    """

    reshard: ReshardPlan | None
    sharding: Sharding
    shape: tuple
    passes: tuple


@dataclass(frozen=True)
class FFTPlan:
    """The stages of one distributed transform; ``str`` lists them with the bytes they move."""

    name: str
    shape: tuple
    sharding: Sharding
    dtype: np.dtype
    stages: tuple
    result_shape: tuple
    result_sharding: Sharding
    result_dtype: np.dtype

    @property
    def elements_moved(self) -> int:
        return sum(s.reshard.elements_moved for s in self.stages if s.reshard is not None)

    @property
    def moves(self) -> int:
        return sum(1 for s in self.stages if s.reshard is not None)

    def __str__(self):
        lines = [f"np.fft.{self.name} of {self.shape} {self.dtype} on mesh {self.sharding.mesh.shape}",
                 f"  input  <{self.sharding}>"]
        k = 0
        for st in self.stages:
            if st.reshard is not None:
                k += 1
                item = np.dtype(self.result_dtype if self.result_dtype.kind == "c" else
                                np.result_type(self.result_dtype, np.complex64)).itemsize
                steps = ", ".join(step.op for step in st.reshard.steps) or "nothing to move"
                moved = st.reshard.elements_moved
                lines.append(f"  {k}. move to <{st.sharding}>: {steps}, {moved} elements "
                             f"({moved * item} bytes) between processes")
            if st.passes:
                k += 1
                lines.append(f"  {k}. local " + ", ".join(str(p) for p in st.passes))
        lines.append(f"  result {self.result_shape} {self.result_dtype} <{self.result_sharding}>")
        lines.append(f"  elements moved between processes: {self.elements_moved} in {self.moves} move(s)")
        return "\n".join(lines)


def passes_of(name: str, shape: tuple, s: tuple, axes: tuple) -> tuple:
    """numpy's 1-D passes for ``np.fft.<name>`` with resolved ``s`` and ``axes``, in numpy's order.

    >>> [str(p) for p in passes_of("rfftn", (4, 6), (4, 6), (0, 1))]
    ['rfft(axis=1, n=6)', 'fft(axis=0, n=4)']
    """
    inverse = name.startswith("i")
    if name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"):
        return tuple(FFTPass(C2C, a, n, inverse) for a, n in reversed(list(zip(axes, s))))
    if name in ("rfft", "rfft2", "rfftn"):
        rest = tuple(FFTPass(C2C, a, n) for a, n in reversed(list(zip(axes[:-1], s[:-1]))))
        return (FFTPass(R2C, axes[-1], s[-1]),) + rest
    if name in ("irfft", "irfft2", "irfftn"):
        rest = tuple(FFTPass(C2C, a, n, True) for a, n in zip(axes[:-1], s[:-1]))
        return rest + (FFTPass(C2R, axes[-1], s[-1], True),)
    if name == "hfft":
        return (FFTPass(HFFT, axes[0], s[0]),)
    if name == "ihfft":
        return (FFTPass(IHFFT, axes[0], s[0], True),)
    raise ValueError(f"unknown transform {name!r}")


def _target(layout, d, busy, shape):
    """The dim that takes ``d``'s mesh axes: the nearest one no remaining pass needs, else the nearest other."""
    free = [t for t in range(len(layout)) if t != d and t not in busy]
    pool = free or [t for t in range(len(layout)) if t != d]
    if not pool:  # a 1-D tensor: the axis is gathered whole on every process
        return None
    return min(pool, key=lambda t: (abs(t - d), t))  # ties: the lower dim, so an inverse retraces a forward


def _resized(s: Sharding, old: tuple, new: tuple) -> Sharding:
    """``s`` for the shape ``new``: explicit offsets of a dim whose length changed (a dim split only over mesh
    axes of size 1, so one shard) become ``(0, length)``."""
    if not s.sharded_dims_offsets or old == new:
        return s
    offs = s.dim_offsets(old)
    flat = [x for d in s.sharded_dims for x in ((0, new[d]) if new[d] != old[d] else offs[d])]
    return s.replace(sharded_dims_offsets=flat)


def _sharding(mesh, layout) -> Sharding:
    while layout and not layout[-1]:
        layout = layout[:-1]
    return Sharding(mesh, [list(a) for a in layout])


@functools.lru_cache(maxsize=256)
def plan_fft(name: str, shape: tuple, sharding: Sharding, dtype: np.dtype, s: tuple | None = None,
             axes: tuple | None = None, result_dtype: np.dtype | None = None) -> FFTPlan:
    """The stages of ``np.fft.<name>`` over a tensor of ``shape`` laid out by ``sharding``.

    ``s``/``axes`` resolved as numpy resolves them (default: every axis, its own length; the 1-D
    functions: one axis).  ``sharding`` must be plain (no halos, no partial axes).  Pure and cached:
    a time loop plans once.

    >>> from meshrt import AbstractMesh, Sharding
    >>> slab = Sharding(AbstractMesh((2,), ("x",)), [["x"]])
    >>> print(plan_fft("rfftn", (4, 4, 4), slab, np.dtype(float)))  # doctest: +NORMALIZE_WHITESPACE
    np.fft.rfftn of (4, 4, 4) float64 on mesh (2,)
      input  <shard.sharding @mesh split_axes = [[0]]>
      1. local rfft(axis=2, n=4), fft(axis=1, n=4)
      2. move to <shard.sharding @mesh split_axes = [[], [0]]>: all_to_all, 24 elements (384 bytes) between processes
      3. local fft(axis=0, n=4)
      result (4, 4, 3) complex128 <shard.sharding @mesh split_axes = [[], [0]]>
      elements moved between processes: 24 in 1 move(s)
    """
    ndim = len(shape)
    if axes is None:
        axes = tuple(range(ndim))
    if s is None:
        s = tuple(shape[a] for a in axes)
    pending = list(passes_of(name, shape, s, axes))
    layout = [tuple(sharding.dim_axes(d)) for d in range(ndim)]

    def split(d):  # a mesh axis of size 1 splits nothing: the dim is whole on every process
        return any(sharding.mesh.shape[a] > 1 for a in layout[d])

    cur, cur_shape = sharding, tuple(shape)
    stages, move, gathered = [], None, []
    while pending:
        if pending[0].kind in _REAL_INPUT:
            ready = [0]
        else:
            ready = [i for i, p in enumerate(pending) if p.kind == C2C] or [len(pending) - 1]
        run, seen = [], set()
        for i in ready:  # one pass per axis a stage (numpy allows an axis twice in ``axes``)
            if not split(pending[i].axis) and pending[i].axis not in seen:
                run.append(i)
                seen.add(pending[i].axis)
        if run:
            done = tuple(pending[i] for i in run)
            if move is None and stages:  # no move since the last stage: one stage
                last = stages.pop()
                stages.append(FFTStage(last.reshard, last.sharding, last.shape, last.passes + done))
            else:
                stages.append(FFTStage(move, cur, cur_shape, done))
            move = None
            pending = [p for i, p in enumerate(pending) if i not in run]
            shape_l = list(cur_shape)
            for p in done:
                shape_l[p.axis] = p.length_after(shape_l[p.axis])
            cur = _resized(cur, cur_shape, tuple(shape_l))
            cur_shape = tuple(shape_l)
            continue
        busy_after = {p.axis for p in pending}
        choices = []
        for i in ready:
            d = pending[i].axis
            t = _target(layout, d, busy_after, cur_shape)
            choices.append((0 if t is None else abs(t - d) + (len(layout) if t in busy_after else 0), -i, d, t))
        _, _, d, t = min(choices)
        # the axes of size 1 stay (they split nothing), so an inverse puts every axis back where it was
        big = tuple(a for a in layout[d] if sharding.mesh.shape[a] > 1)
        if t is not None:
            layout[t] = layout[t] + big
        else:
            gathered.append((d, big))
        layout[d] = tuple(a for a in layout[d] if a not in big)
        new = _sharding(sharding.mesh, layout)
        step = plan_reshard(cur, new, cur_shape)
        if move is not None:  # two moves in a row (no free dim): plan them as one
            step = plan_reshard(move.src, new, cur_shape)
        move, cur = step, new
    for d, big in gathered:  # a gathered axis is split again where it was: a local slice, nothing moves
        layout[d] = layout[d] + big
        new = _sharding(sharding.mesh, layout)
        stages.append(FFTStage(plan_reshard(cur, new, cur_shape), new, cur_shape, ()))
        cur = new
    rdt = np.dtype(result_dtype) if result_dtype is not None else (
        np.dtype(np.float64) if name in ("irfft", "irfft2", "irfftn", "hfft") else np.dtype(np.complex128))
    return FFTPlan(name, tuple(shape), sharding, np.dtype(dtype), tuple(stages), cur_shape, cur, rdt)
