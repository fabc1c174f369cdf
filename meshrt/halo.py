"""Halo (ghost-cell) exchange: a pure planner and a persistent MPI executor.

`plan_halo` says, for one device, which box of its local buffer goes to which
neighbour and which halo box comes back (faces, edges and corners: one direct
message per neighbour direction, so 9- and 27-point stencils see filled
corners). `HaloExchange` turns a plan into persistent MPI requests bound to
one local buffer, built once and run many times. `update_halo` is the
dialect's op on a local array, with a cache of exchanges.

>>> from meshrt.mesh import AbstractMesh
>>> from meshrt.sharding import Sharding
>>> s = Sharding(AbstractMesh((4,)), [[0]], halo_sizes=[1, 1])
>>> p = plan_halo(s, (8, 5), device=1)
>>> [(m.direction, m.peer, m.send_box[0], m.recv_box[0]) for m in p.messages]
[((-1,), 0, slice(1, 2, None), slice(0, 1, None)), ((1,), 2, slice(2, 3, None), slice(3, 4, None))]

Design notes (why):

* Direct diagonal messages rather than dimension-by-dimension exchange: all
  messages start in one ``Startall`` and nothing waits on a previous
  dimension, so ``start()``/``wait()`` overlap the whole update with compute.
  Edge and corner boxes are small; in 1-D splits (the common case) there is
  no difference in message count.
* Boxes that are contiguous in the C-ordered buffer (full rows of a split on
  dim 0) are sent from and received into the buffer itself: no copy at all.
  Other boxes are packed/unpacked by a compiled copy table (`meshrt._halo`)
  into one preallocated staging buffer; MPI derived datatypes are available
  (``method="datatype"``) but measured slower with MPICH (see bench_halo).
* Contiguous and packed boxes move as bytes (``MPI.BYTE``): a halo copy
  never converts, so every numpy dtype works.
* Tags encode the direction the data travels, so two directions that reach
  the same process (a periodic dim of size 2) stay apart. Exchanges run on
  the mesh's private duplicate communicator (``mesh.group(all axes)``), so
  they never match user point-to-point traffic. Several exchanges in flight
  at once must be started in the same order on every process (MPI's
  non-overtaking rule then pairs them).
"""

from __future__ import annotations

import atexit
import collections
import functools
import itertools
import math
import weakref
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .errors import CollectiveError, MeshError, ShardingError
from .mesh import Mesh
from .sharding.spec import Sharding

__all__ = ["HaloMessage", "HaloPlan", "plan_halo", "HaloExchange", "HaloGroupExchange", "HaloHandle",
           "update_halo", "clear_halo_cache"]

# Tags: _TAG_BASE + direction code (base-3 digits of direction + 1, one per
# sharded dim). 3**9 directions fit under the 32767 every MPI guarantees.
_TAG_BASE = 12288
_MAX_SHARDED_DIMS = 9


# ---------------------------------------------------------------------------
# planner (pure, no MPI)
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class HaloMessage:
    """One neighbour direction of a device's halo plan.

    ``direction`` has one entry in {-1, 0, 1} per sharded dim (in
    ``sharding.sharded_dims`` order). ``peer`` is the neighbour's linear
    device index, or ``None`` at a non-periodic domain boundary.
    ``send_box`` is the owned region sent to ``peer`` (it lands in the
    peer's halo facing us); ``recv_box`` is the halo region filled from
    ``peer``. Either box may be empty (zero halo width on that side).
    """

    direction: tuple
    peer: Optional[int]
    send_box: tuple
    recv_box: tuple
    send_tag: int
    recv_tag: int
    local: bool = False  # peer is this device itself (a periodic dim of one shard)

    @property
    def sends(self) -> bool:
        return self.peer is not None and _box_size(self.send_box) > 0

    @property
    def receives(self) -> bool:
        return self.peer is not None and _box_size(self.recv_box) > 0


@dataclass(frozen=True)
class HaloPlan:
    """Everything one device needs to update its halos; pure data, printable.

    ``global_shape`` is ``None`` for plans built from a local shape alone
    (`update_halo` without ``global_shape``). ``messages`` lists every
    neighbour direction (3**k - 1 for k sharded dims), boundaries included.
    """

    sharding: Sharding
    global_shape: Optional[tuple]
    device: int
    local_shape: tuple
    periodic: tuple
    messages: tuple

    @functools.cached_property
    def sends(self) -> tuple:
        """Messages this device sends over MPI."""
        return tuple(m for m in self.messages if m.sends and not m.local)

    @functools.cached_property
    def recvs(self) -> tuple:
        """Messages this device receives over MPI."""
        return tuple(m for m in self.messages if m.receives and not m.local)

    @functools.cached_property
    def local_copies(self) -> tuple:
        """``(recv_box, send_box)`` pairs copied within the buffer (periodic, one shard)."""
        by_dir = {m.direction: m for m in self.messages}
        out = []
        for m in self.messages:
            if m.local and m.receives:
                src = by_dir[tuple(-e for e in m.direction)].send_box
                out.append((m.recv_box, src))
        return tuple(out)

    def __str__(self):
        lines = [f"halo plan for device {self.device}: local shape {self.local_shape}, "
                 f"global shape {self.global_shape}, periodic {self.periodic}"]
        for m in self.messages:
            peer = "boundary" if m.peer is None else ("self" if m.local else f"device {m.peer}")
            lines.append(f"  {m.direction}: {peer}; send {_fmt_box(m.send_box)} tag {m.send_tag}, "
                         f"recv {_fmt_box(m.recv_box)} tag {m.recv_tag}")
        return "\n".join(lines)


def _box_size(box) -> int:
    return math.prod(s.stop - s.start for s in box)


def _fmt_box(box) -> str:
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in box) + "]"


def _tag(direction) -> int:
    code = 0
    for e in reversed(direction):
        code = code * 3 + (e + 1)
    return _TAG_BASE + code


def periodic_tuple(periodic, ndim: int) -> tuple:
    """``periodic`` (None, a bool, or one bool per tensor dim) as one bool per dim."""
    if periodic is None or periodic is False or periodic is True:
        return (bool(periodic),) * ndim
    if isinstance(periodic, (int, np.bool_)) and not isinstance(periodic, (list, tuple)):
        return (bool(periodic),) * ndim
    try:
        per = tuple(bool(p) for p in periodic)
    except TypeError:
        raise ShardingError(f"periodic: {periodic!r} is neither a bool nor a per-dim sequence of bools") from None
    if len(per) != ndim:
        raise ShardingError(f"periodic: {list(per)} has {len(per)} entries; the tensor has {ndim} dims")
    return per


def _device_of(sharding: Sharding, device) -> int:
    mesh = sharding.mesh
    if device is None:
        if isinstance(mesh, Mesh):
            return mesh.rank
        raise ShardingError("device: none given, and an AbstractMesh has no 'this process'")
    try:
        if hasattr(device, "__index__") and not isinstance(device, bool):
            return mesh._check_device(device)
        return mesh.linear_index(device)
    except MeshError as e:
        raise ShardingError(str(e)) from None


def plan_halo(sharding: Sharding, global_shape, periodic=None, device=None) -> HaloPlan:
    """The halo plan of one device: which boxes it sends to and receives from whom.

    Pure (no MPI): works on an `AbstractMesh`.  The plan lists every neighbour
    direction (``3**k - 1`` for ``k`` sharded dims: faces, edges and corners),
    boundaries included.  Cached on its arguments.

    Parameters
    ----------
    sharding : Sharding
        The tensor's sharding, with its ``halo_sizes``.
    global_shape : sequence of int
        The tensor's global shape.
    periodic : bool or sequence of bool, optional
        A bool for every dim or one bool per tensor dim; default False.
    device : int or tuple of int, optional
        The device, as a linear index or coordinates; default this process's
        (required on an `AbstractMesh`).

    Returns
    -------
    HaloPlan
        The device's messages, with send/receive boxes in its local buffer and
        MPI tags; printable.

    Raises
    ------
    ShardingError
        ``sharding`` is not a `Sharding`, the shape does not fit it, ``periodic``
        has the wrong length, or no valid device is given.

    See Also
    --------
    HaloExchange, update_halo

    Examples
    --------
    >>> from meshrt.mesh import AbstractMesh
    >>> s = Sharding(AbstractMesh((2,)), [[0]], halo_sizes=[1, 2])
    >>> print(plan_halo(s, (6,), periodic=True, device=0))
    halo plan for device 0: local shape (6,), global shape (6,), periodic (True,)
      (-1,): device 1; send [1:3] tag 12288, recv [0:1] tag 12290
      (1,): device 1; send [3:4] tag 12290, recv [4:6] tag 12288

    A 2-D split: device 0 of a 2x2 mesh exchanges with its right, lower and
    diagonal neighbours only (the others are the domain boundary):

    >>> s2 = Sharding(AbstractMesh((2, 2)), [[0], [1]], halo_sizes=[1, 1, 1, 1])
    >>> p = plan_halo(s2, (4, 4), device=0)
    >>> [m.peer for m in p.sends]
    [1, 2, 3]
    """
    if not isinstance(sharding, Sharding):
        raise ShardingError(f"sharding: {sharding!r} is not a Sharding")
    shape = sharding.check_shape(global_shape)
    per = periodic_tuple(periodic, len(shape))
    return _plan_global(sharding, shape, per, _device_of(sharding, device))


_plan_cache: dict = {}


def _plan_global(sharding, shape, per, device, local=None) -> HaloPlan:
    """``plan_halo``'s plan, cached; ``local``: this device's local shape when the caller has it."""
    key = (sharding, shape, per, device)
    plan = _plan_cache.get(key)
    if plan is None:
        offsets = None  # (a new shape's offsets cost more than its plan: looked at for a wrapped halo only)
        for d in sharding.sharded_dims:
            if not per[d]:
                continue
            if offsets is None:
                offsets = sharding.dim_offsets(shape)
            lo, hi = sharding.halo_widths(d)
            widths = [b - a for a, b in zip(offsets[d], offsets[d][1:])]
            # A wrapped halo comes from the other end of the dim: check that shard too.
            if lo > widths[-1]:
                raise ShardingError(
                    f"halo_sizes: dim {d} low halo {lo} is wider than shard {len(widths) - 1}'s width "
                    f"{widths[-1]}, its periodic neighbour (shape {shape}, {len(widths)} shards)")
            if hi > widths[0]:
                raise ShardingError(
                    f"halo_sizes: dim {d} high halo {hi} is wider than shard 0's width {widths[0]}, "
                    f"its periodic neighbour (shape {shape}, {len(widths)} shards)")
        if local is None:
            local = sharding.local_shape(shape, device)
        plan = _make_plan(sharding, shape, local, per, device)
        if len(_plan_cache) > 4096:
            _plan_cache.clear()
        _plan_cache[key] = plan
    return plan


def _plan_local(sharding: Sharding, local_shape: tuple, per: tuple, device: int) -> HaloPlan:
    """A plan from this device's local buffer shape alone (no global shape, no MPI).

    Message sizes only depend on halo widths and on this shard's own widths
    (a diagonal neighbour shares our shard index on every dim it does not
    step along), so the local shape is enough.
    """
    if len(sharding.split_axes) > len(local_shape):
        raise ShardingError(
            f"split_axes: splits {len(sharding.split_axes)} dims, but the local array has only "
            f"{len(local_shape)} (shape {local_shape})")
    for d in sharding.sharded_dims:
        lo, hi = sharding.halo_widths(d)
        if local_shape[d] < lo + hi:
            raise ShardingError(
                f"halo_sizes: dim {d} halos {lo}+{hi} exceed the local array's dim {d} size "
                f"{local_shape[d]} (shape {local_shape})")
    plan = _make_plan(sharding, None, tuple(local_shape), per, device)
    _check_send_boxes(plan)
    return plan


def _check_send_boxes(plan: HaloPlan) -> None:
    """Raise if a box this device sends reaches past its owned cells into its own halo.

    Without a global shape nothing else catches a shard narrower than the
    halo its neighbour expects: the neighbour would silently get halo cells.
    """
    s, local = plan.sharding, plan.local_shape
    for m in plan.messages:
        if not m.sends:
            continue
        for e, d in zip(m.direction, s.sharded_dims):
            lo, hi = s.halo_widths(d)
            w = local[d] - lo - hi
            need = hi if e < 0 else lo
            if e and need > w:
                side = "low" if e > 0 else "high"
                raise ShardingError(
                    f"halo_sizes: dim {d} {side} halo {need} is wider than this shard's {w} owned cells "
                    f"(local shape {local} = {w} owned + halos {lo}+{hi} on dim {d}); the neighbour's "
                    f"halo would get this shard's own halo cells")


def _agree_errors(comm, error, op: str, mesh) -> None:
    """Raise ``error`` (a message or None) on every process of ``comm`` (``mesh``'s) when any
    process has one."""
    from .runtime import mpi as _mpi

    with _mpi.internal(op, "plan agreement", mesh):
        errors = comm.allgather(error)
    bad = [r for r, e in enumerate(errors) if e is not None]
    if bad:
        raise ShardingError(f"{errors[bad[0]]} (on rank{'s' if len(bad) > 1 else ''} {bad})")


_TEMPLATES: dict = {}  # (sharding, periodic, device) -> `_template`'s answer


def _template(sharding, per, device):
    """What a halo plan takes from the sharding alone, not from the shape: per sharded dim ``(dim, axes,
    index k, split size n, lo, hi)``, and per neighbour direction its peer (None past a non-periodic
    boundary).  Cached: a loop over new shapes plans only the boxes."""
    key = (sharding, per, device)
    e = _TEMPLATES.get(key)
    if e is None:
        mesh = sharding.mesh
        dims = sharding.sharded_dims
        if len(dims) > _MAX_SHARDED_DIMS:
            raise ShardingError(
                f"split_axes: {len(dims)} sharded dims; halo exchange supports at most {_MAX_SHARDED_DIMS}")
        coords = mesh.multi_index(device)
        info = []
        for d in dims:
            lo, hi = sharding.halo_widths(d)
            axes = sharding.dim_axes(d)
            info.append((d, axes, mesh.in_group_index(coords, axes), sharding.dim_split_size(d), lo, hi))
        peers = []
        if any(lo or hi for (_, _, _, _, lo, hi) in info):
            for direction in itertools.product((-1, 0, 1), repeat=len(dims)):
                if not any(direction):
                    continue
                peer_coords = list(coords)
                peer = device
                for e, (d, axes, k, n, lo, hi) in zip(direction, info):
                    if e == 0:
                        continue
                    j = k + e
                    if not 0 <= j < n:
                        if not per[d]:
                            peer = None
                        j %= n
                    if peer is not None:
                        for a, c in zip(axes, mesh.group_coords(axes, j)):
                            peer_coords[a] = c
                peer = None if peer is None else mesh.linear_index(peer_coords)
                peers.append((direction, peer, _tag(direction), _tag(tuple([-e for e in direction])),
                              peer == device))
        e = (tuple(info), tuple(peers))
        if len(_TEMPLATES) > 4096:
            _TEMPLATES.clear()
        _TEMPLATES[key] = e
    return e


def _frozen(cls, fields: dict):
    """An instance of the frozen dataclass ``cls`` holding ``fields`` (every field, and any cached property's
    value), without its ``__init__``: a frozen dataclass's sets each field through ``object.__setattr__``,
    2.4 us a message, and a loop over new shapes plans a halo each time."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


_MESSAGES: dict = {}  # (sharding, periodic, device, local shape) -> `_messages`' answer


def _make_plan(sharding, global_shape, local, per, device) -> HaloPlan:
    fields = dict(sharding=sharding, global_shape=global_shape, device=device, local_shape=local, periodic=per)
    key = (sharding, per, device, local)
    m = _MESSAGES.get(key)
    if m is None:
        m = _messages(sharding, local, per, device)
        if len(_MESSAGES) > 4096:
            _MESSAGES.clear()
        _MESSAGES[key] = m
    messages, sends, recvs, local_copies = m
    fields.update(messages=messages, sends=sends, recvs=recvs)
    if not local_copies:  # (else `HaloPlan.local_copies` works them out when asked)
        fields["local_copies"] = ()
    return _frozen(HaloPlan, fields)


def _messages(sharding, local, per, device):
    """A plan's messages, those it sends and receives over MPI, and whether it has local copies: from the
    local shape alone (the global shape only names the plan), so tensors of new global shapes whose blocks
    are alike share them (the messages are immutable)."""
    template, peers = _template(sharding, per, device)
    info = []  # per sharded dim: (dim, lo, hi, owned width)
    for d, axes, k, n, lo, hi in template:
        w = local[d] - lo - hi
        if n == 1 and per[d] and (lo > w or hi > w):
            raise ShardingError(
                f"halo_sizes: dim {d} halos ({lo}, {hi}) are wider than its single periodic shard "
                f"of width {w}")
        info.append((d, lo, hi, w))
    if not peers:
        return (), (), (), False
    whole = [slice(0, s) for s in local]
    # (the boxes' emptiness from their widths: a box is empty where any of its dims is)
    sharded = {i[0] for i in info}
    rest_full = all(local[d] > 0 for d in range(len(local)) if d not in sharded)
    messages, sends, recvs, local_copies = [], [], [], False
    for direction, peer, send_tag, recv_tag, is_local in peers:
        send, recv = list(whole), list(whole)
        send_full = recv_full = rest_full
        for e, (d, lo, hi, w) in zip(direction, info):
            if e == 0:
                send[d] = recv[d] = slice(lo, lo + w)
                if w <= 0:
                    send_full = recv_full = False
            elif e < 0:
                # The peer below fills its high halo (width hi) with our lowest owned cells.
                send[d] = slice(lo, lo + hi)
                recv[d] = slice(0, lo)
                send_full, recv_full = send_full and hi > 0, recv_full and lo > 0
            else:
                send[d] = slice(w, lo + w)  # the peer above fills its low halo (width lo)
                recv[d] = slice(lo + w, lo + w + hi)
                send_full, recv_full = send_full and lo > 0, recv_full and hi > 0
        m = _frozen(HaloMessage, {"direction": direction, "peer": peer, "send_box": tuple(send),
                                  "recv_box": tuple(recv), "send_tag": send_tag, "recv_tag": recv_tag,
                                  "local": is_local})
        messages.append(m)
        if peer is not None:
            if is_local:
                local_copies = True
            else:  # (`HaloMessage.sends` / `.receives`, on the boxes at hand)
                if send_full:
                    sends.append(m)
                if recv_full:
                    recvs.append(m)
    return tuple(messages), tuple(sends), tuple(recvs), local_copies


# ---------------------------------------------------------------------------
# executor (MPI)
# ---------------------------------------------------------------------------

try:
    from ._halo import CopyTable as _CopyTable
except ImportError:  # not built (source checkout): same semantics, one Python call per box
    from ._blockcopy import copy_block as _copy_block

    class _CopyTable:
        def __init__(self, pairs):
            self._pairs = [(d, s) for d, s in pairs]
            self.nbytes = sum(d.nbytes for d, _ in self._pairs)

        def __len__(self):
            return len(self._pairs)

        def run(self):
            for d, s in self._pairs:
                _copy_block(d, s)


_LIVE: "weakref.WeakSet[HaloExchange]" = weakref.WeakSet()
_atexit_registered = False


def _free_all_at_exit():
    # Registered after mpi4py's own finalizer (atexit is LIFO), so persistent
    # requests and datatypes are freed while MPI is still initialized.
    for ex in list(_LIVE):
        ex.free()
    _exchange_cache.clear()


def _register_atexit():
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_free_all_at_exit)
        _atexit_registered = True


class HaloHandle:
    """What `HaloExchange.start` returns: ``.wait()`` finishes the update."""

    __slots__ = ("_ex",)

    def __init__(self, ex):
        self._ex = ex

    def wait(self):
        """Wait for the halos and unpack them; returns the local array."""
        self._ex.wait()
        return self._ex.array


class HaloExchange:
    """A halo update of one local buffer, planned once, run many times.

    ``local_array`` is updated in place.  Collective over the mesh on first use
    (it may create the mesh's duplicate communicator).  Use it as a context
    manager, or call `free` when done::

        ex = HaloExchange(u_local, sharding, (4096, 4096), periodic=True)
        for step in range(n):
            h = ex.start()          # packs, starts all messages
            interior_work()
            h.wait()                # or ex.wait(); ex() = start + wait
        ex.free()                   # or: with HaloExchange(...) as ex: ...

    Parameters
    ----------
    local_array : numpy.ndarray
        This process's C-contiguous buffer: owned part plus halos, shape
        ``sharding.local_shape(global_shape)``.
    sharding : Sharding
        The buffer's sharding, on a `Mesh`, with its ``halo_sizes``.
    global_shape : sequence of int, optional
        The tensor's global shape.  With None the plan is built from the local
        shape alone (no check against the global layout).
    periodic : bool or sequence of bool, optional
        Wrap around at the domain boundary: one bool for every dim or one per
        tensor dim.  Default False.
    method : str, optional
        How non-contiguous boxes travel: ``"pack"`` (compiled copy into a
        staging buffer, the default) or ``"datatype"`` (MPI subarray types
        straight from the buffer).  Contiguous boxes always go zero-copy.

    Raises
    ------
    ShardingError
        ``sharding`` is not a `Sharding`, or ``local_array``'s shape does not
        fit it (raised on every process when ``global_shape`` is None).
    CollectiveError
        The sharding's mesh is an `AbstractMesh`, an unknown ``method``, or
        (from `start`/`wait`) a freed exchange or a ``start`` not waited for.

    See Also
    --------
    update_halo, plan_halo, DistributedTensor.update_halo

    Notes
    -----
    One message per neighbour direction (faces, edges and corners), all started
    in one ``MPI_Startall`` on persistent requests; several exchanges in flight
    at once must be started in the same order on every process.

    Examples
    --------
    At one process a periodic dim is filled from the device's own other end:

    >>> from meshrt import Mesh, Sharding
    >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
    >>> u = np.array([0.0, 1, 2, 3, 4, 0])       # halo, 4 owned, halo
    >>> with HaloExchange(u, s, (4,), periodic=True) as ex:
    ...     handle = ex.start()
    ...     handle.wait()
    array([4., 1., 2., 3., 4., 1.])
    """

    def __init__(self, local_array, sharding: Sharding, global_shape=None, periodic=None, *, method="pack"):
        if not isinstance(sharding, Sharding):
            raise ShardingError(f"sharding: {sharding!r} is not a Sharding")
        mesh = sharding.mesh
        if not isinstance(mesh, Mesh):
            raise CollectiveError(
                f"mesh: {mesh!r} is an AbstractMesh; a halo exchange needs a Mesh bound to a communicator")
        if method not in ("pack", "datatype"):
            raise CollectiveError(f"method: {method!r}; expected 'pack' or 'datatype'")
        x = _check_array(local_array)
        if global_shape is not None:
            shape = sharding.check_shape(global_shape)
            if len(shape) != x.ndim:
                raise ShardingError(
                    f"global_shape: {shape} has {len(shape)} dims but the local array has {x.ndim} "
                    f"(shape {x.shape})")
            per = periodic_tuple(periodic, len(shape))
            plan = _plan_global(sharding, shape, per, mesh.rank)
            if plan.local_shape != x.shape:
                raise ShardingError(
                    f"local_array: shape {x.shape} is not this shard's local shape {plan.local_shape} "
                    f"(global shape {shape}, halo_sizes {list(sharding.halo_sizes)}, device {mesh.rank})")
        else:
            # Shard widths differ between processes, so one process's bad width
            # must become every process's error (this constructor is collective).
            per = periodic_tuple(periodic, x.ndim)
            error = plan = None
            try:
                plan = _plan_local(sharding, x.shape, per, mesh.rank)
            except ShardingError as e:
                error = str(e)
            _agree_errors(mesh.group(tuple(range(mesh.ndim))), error, "HaloExchange", mesh)
        self._setup(x, plan, method, mesh)

    @classmethod
    def _of_plan(cls, x, plan: HaloPlan, mesh) -> "HaloExchange":
        """The exchange of a plan its caller checked against ``x`` (a fused expression's lasting plan,
        `meshrt.tensor.lazy`: its once-plan ran the same plan), without the constructor's checks."""
        ex = object.__new__(cls)
        ex._setup(x, plan, "pack", mesh)
        return ex

    def _setup(self, x, plan, method, mesh):
        self.plan = plan
        self.array = x
        self.method = method
        self._reqs = []
        self._types = []
        self._active = False
        self._freed = False
        self._handle = HaloHandle(self)
        self._build(mesh)
        _LIVE.add(self)

    def _build(self, mesh):
        from mpi4py import MPI

        _register_atexit()
        x, plan = self.array, self.plan
        flat = x.reshape(-1).view(np.uint8)
        staged_send, staged_recv = [], []
        sends, recvs = plan.sends, plan.recvs
        # Decided by the sharding alone (same on every process), since creating
        # the group is collective: a process with only empty boxes still joins.
        comm = mesh.group(tuple(range(mesh.ndim))) if plan.messages else None
        self._comm = comm
        # recvs first so that Startall posts them before our sends go out
        ops = [(m.recv_box, m.peer, m.recv_tag, True) for m in recvs] + \
              [(m.send_box, m.peer, m.send_tag, False) for m in sends]
        pending = []
        if self.method == "datatype" and ops:
            # The element type itself (not bytes) lets MPICH's packer use word-sized loops.
            try:
                from mpi4py.util.dtlib import from_numpy_dtype

                elem = from_numpy_dtype(x.dtype).Dup()
            except (ValueError, KeyError, TypeError):
                elem = MPI.BYTE.Create_contiguous(x.itemsize)
            elem.Commit()
            self._types.append(elem)
        for box, peer, tag, is_recv in ops:
            view = x[box]
            if view.flags.c_contiguous:
                pending.append((view.reshape(-1).view(np.uint8), peer, tag, is_recv))
            elif self.method == "datatype":
                sub = [s.stop - s.start for s in box]
                starts = [s.start for s in box]
                dt = elem.Create_subarray(list(x.shape), sub, starts).Commit()
                self._types.append(dt)
                pending.append(([flat, 1, dt], peer, tag, is_recv))
            else:
                (staged_recv if is_recv else staged_send).append(len(pending))
                pending.append((view, peer, tag, is_recv))
        # One staging block for every packed box, carved into per-box buffers.
        total = sum(pending[i][0].nbytes for i in staged_send + staged_recv)
        self._staging = np.empty(total, dtype=np.uint8)
        pos = 0
        pack, unpack = [], []
        for i in staged_send + staged_recv:
            view, peer, tag, is_recv = pending[i]
            buf = self._staging[pos:pos + view.nbytes]
            pos += view.nbytes
            typed = buf.view(x.dtype).reshape(view.shape)
            (unpack if is_recv else pack).append((view, typed) if is_recv else (typed, view))
            pending[i] = (buf, peer, tag, is_recv)
        for buf, peer, tag, is_recv in pending:
            spec = buf if isinstance(buf, list) else [buf, MPI.BYTE]
            if is_recv:
                self._reqs.append(comm.Recv_init(spec, peer, tag))
            else:
                self._reqs.append(comm.Send_init(spec, peer, tag))
        self._pack = _CopyTable(pack) if pack else None
        self._unpack = _CopyTable(unpack) if unpack else None
        local = [(x[r], x[s]) for r, s in plan.local_copies]
        self._local = _CopyTable(local) if local else None
        self._startall = MPI.Prequest.Startall
        self._waitall = MPI.Request.Waitall

    # -- running ---------------------------------------------------------------
    def start(self) -> HaloHandle:
        """Pack and start every message (non-blocking).

        Returns
        -------
        HaloHandle
            A handle whose ``wait()`` finishes the update and returns the local
            array.

        Raises
        ------
        CollectiveError
            The exchange was freed, or the previous ``start()`` was not waited for.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
        >>> ex = HaloExchange(np.array([0, 1, 2, 0]), s, (2,), periodic=True)
        >>> ex.start().wait()
        array([2, 1, 2, 1])
        >>> ex.free()
        """
        if self._active or self._freed:
            self._misuse("start")
        self._active = True
        if self._pack is not None:
            self._pack.run()
        if self._reqs:
            self._startall(self._reqs)
        if self._local is not None:
            self._local.run()  # overlaps the messages in flight
        return self._handle

    def wait(self):
        """Wait for every message and unpack the halos.

        Calling it with no update in flight returns the array at once.

        Returns
        -------
        numpy.ndarray
            The local array, updated in place.

        Raises
        ------
        CollectiveError
            The exchange was freed.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
        >>> ex = HaloExchange(np.array([0, 1, 2, 0]), s, (2,), periodic=True)
        >>> _ = ex.start()
        >>> ex.wait()
        array([2, 1, 2, 1])
        >>> ex.free()
        """
        if not self._active:
            if self._freed:
                self._misuse("wait")
            return self.array
        if self._reqs:
            self._waitall(self._reqs)
        if self._unpack is not None:
            self._unpack.run()
        self._active = False
        return self.array

    def __call__(self):
        """``start()`` then ``wait()``; returns the local array.

        ``update`` is the same method.

        Returns
        -------
        numpy.ndarray
            The local array, updated in place.

        Raises
        ------
        CollectiveError
            The exchange was freed, or a previous ``start()`` was not waited for.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
        >>> with HaloExchange(np.array([0, 1, 2, 0]), s, (2,), periodic=True) as ex:
        ...     ex.update()
        array([2, 1, 2, 1])
        """
        self.start()
        return self.wait()

    update = __call__

    def _misuse(self, what):
        if self._freed:
            raise CollectiveError(f"{what}: this HaloExchange was freed; build a new one")
        raise CollectiveError(f"{what}: the previous start() has not been waited for; call wait() first")

    # -- lifetime ----------------------------------------------------------------
    @property
    def freed(self) -> bool:
        """Whether `free` has run (a freed exchange cannot start again)."""
        return self._freed

    def free(self) -> None:
        """Free the persistent requests and datatypes (local, not collective).

        An update in flight is completed first.  Idempotent; also run at
        interpreter exit, before MPI finalizes.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
        >>> ex = HaloExchange(np.zeros(4), s, (2,))
        >>> ex.free()
        >>> ex.freed
        True
        """
        if self._freed:
            return
        self._freed = True
        try:
            from mpi4py import MPI

            if MPI.Is_finalized():
                return
            if self._active and self._reqs:
                MPI.Request.Waitall(self._reqs)
            for r in self._reqs:
                r.Free()
            for t in self._types:
                t.Free()
        finally:
            self._active = False
            self._reqs = []
            self._types = []
            _LIVE.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self):
        state = "freed" if self._freed else f"{len(self._reqs)} persistent requests"
        return f"HaloExchange({self.plan.sharding}, local shape {self.array.shape}, {self.array.dtype}, {state})"


class _OnceExchange:
    """A halo update run once: the plan's messages as plain ``Irecv``/``Isend`` (no persistent requests, no
    staging kept), for a fused expression on a shape seen once (`meshrt.tensor.lazy`).  `HaloExchange`'s
    ``start``/``wait``/``free``, on a C-contiguous buffer of ``sharding.local_shape(global_shape)``;
    ``global_shape`` a tuple and ``periodic`` one bool per dim, as its one caller has them."""

    __slots__ = ("array", "plan", "comm", "_reqs", "_bufs", "_unpack")

    def __init__(self, x, sharding: Sharding, global_shape: tuple, periodic: tuple):
        mesh = sharding.mesh
        self.array = x
        self.plan = _plan_global(sharding, global_shape, periodic, mesh.rank, x.shape)
        self.comm = mesh.group(tuple(range(mesh.ndim))) if self.plan.messages else None
        self._reqs = None

    def start(self):
        from mpi4py import MPI

        from .runtime import mpi as _mpi

        x, comm = self.array, self.comm
        reqs, bufs, unpack = [], [], []
        if self.plan.messages:
            with _mpi.internal("update_halo", "the one-shot ghost exchange of a new shape", comm):
                for m in self.plan.recvs:  # posted before our sends go out
                    view = x[m.recv_box]
                    buf = view if view.flags.c_contiguous else np.empty(view.shape, x.dtype)
                    if buf is not view:
                        unpack.append((view, buf))
                    bufs.append(buf)
                    reqs.append(comm.Irecv([buf.reshape(-1).view(np.uint8), MPI.BYTE], m.peer, m.recv_tag))
                for m in self.plan.sends:
                    buf = np.ascontiguousarray(x[m.send_box])
                    bufs.append(buf)
                    reqs.append(comm.Isend([buf.reshape(-1).view(np.uint8), MPI.BYTE], m.peer, m.send_tag))
        for r, src in self.plan.local_copies:
            x[r] = x[src]
        self._reqs, self._bufs, self._unpack = reqs, bufs, unpack
        return self

    def wait(self):
        from mpi4py import MPI

        if self._reqs:
            MPI.Request.Waitall(self._reqs)
        for view, buf in self._unpack or ():
            view[...] = buf
        self._reqs = self._bufs = self._unpack = None
        return self.array

    def free(self):
        pass


class HaloGroupExchange:
    """Halo update of several local buffers with one message per neighbour (IGG's ``update_halo!(A, B, C)``).

    Fields must have *compatible* shardings: the same mesh, the same mesh
    axes on every sharded dim and the same ``periodic`` flags there, so every
    field has the same neighbour in every direction. Halo widths, dtypes and
    global shapes may differ (staggered fields of size ``n + 1``). For each
    neighbour direction, the boxes of all fields travel in one message,
    packed into one staging block by the compiled copy table (a message of a
    single contiguous box goes zero-copy).  ``coalesce="auto"`` (default)
    sends a direction whose boxes are all contiguous (faces of a split of the
    first dim) and together exceed 8 KiB as one zero-copy message per field
    instead, all started together: there packing costs more than the
    latencies it saves (with MPICH on shared memory, three fields' faces
    packed take 1.7x the per-field messages at 4096^2, 0.55x at 256^2);
    ``coalesce=True`` always packs, ``False`` never does (one message per
    field and direction).
    Built once, run many times; ``free()`` frees its persistent requests.

        ex = HaloGroupExchange([p.local, vx.local], [p.sharding, vx.sharding],
                               [p.global_shape, vx.global_shape])
        h = ex.start(); interior_work(); h.wait()
        ex.free()

    ``global_shapes`` and ``periodic`` have one entry per array (a global
    shape or ``None`` to plan from the local shape alone; ``periodic`` as for
    `HaloExchange`); a bare ``periodic=None``/``True``/``False`` applies to all.
    """

    def __init__(self, arrays, shardings, global_shapes=None, periodic=None, *, coalesce="auto"):
        if coalesce not in ("auto", True, False):
            raise CollectiveError(f"coalesce: {coalesce!r} is not 'auto', True or False")
        self._coalesce = coalesce
        arrays, shardings = list(arrays), list(shardings)
        n = len(arrays)
        if n == 0 or len(shardings) != n:
            raise CollectiveError(f"arrays: {n} arrays but {len(shardings)} shardings; give one sharding per array")
        global_shapes = [None] * n if global_shapes is None else list(global_shapes)
        periodic = [periodic] * n if periodic is None or isinstance(periodic, (bool, np.bool_)) else list(periodic)
        if len(global_shapes) != n or len(periodic) != n:
            raise CollectiveError(f"global_shapes/periodic: need one entry per array ({n})")
        for i, s in enumerate(shardings):
            if not isinstance(s, Sharding):
                raise ShardingError(f"shardings[{i}]: {s!r} is not a Sharding")
            if not isinstance(s.mesh, Mesh):
                raise CollectiveError(f"shardings[{i}]: its mesh is an AbstractMesh; an exchange needs a Mesh")
        mesh = shardings[0].mesh
        arrays = [_check_array(x) for x in arrays]
        # Neighbours follow from the sharding alone, so this check gives every process the same verdict.
        ref = None
        for i, (x, s, p) in enumerate(zip(arrays, shardings, periodic)):
            if s.mesh != mesh:
                raise ShardingError(f"shardings[{i}]: mesh {s.mesh} differs from field 0's mesh {mesh}")
            if not any(s.halo_sizes or ()):
                continue
            per = periodic_tuple(p, x.ndim)
            layout = tuple((d, s.dim_axes(d), per[d]) for d in s.sharded_dims)
            if ref is None:
                ref = (i, layout, per)
            elif layout != ref[1]:
                raise ShardingError(
                    f"shardings[{i}]: {s} with periodic {list(per)} splits or wraps its dims otherwise than "
                    f"field {ref[0]}'s {shardings[ref[0]]} (periodic {list(ref[2])}); one exchange needs "
                    "the same split axes and periodic flags on every sharded dim")
        # A local shape may be wrong on some processes only: every process raises alike.
        plans, error = [], None
        for i, (x, s, g, p) in enumerate(zip(arrays, shardings, global_shapes, periodic)):
            try:
                if g is None:
                    plan = _plan_local(s, x.shape, periodic_tuple(p, x.ndim), mesh.rank)
                else:
                    shape = s.check_shape(g)
                    plan = _plan_global(s, shape, periodic_tuple(p, len(shape)), mesh.rank)
                    if plan.local_shape != x.shape:
                        raise ShardingError(
                            f"arrays[{i}]: shape {x.shape} is not this shard's local shape {plan.local_shape} "
                            f"(global shape {shape}, {s})")
            except ShardingError as e:
                error = error or f"field {i}: {e}"
                plan = None
            plans.append(plan)
        _agree_errors(mesh.group(tuple(range(mesh.ndim))), error, "HaloGroupExchange", mesh)
        self.plans = tuple(plans)
        self.arrays = tuple(arrays)
        self._reqs, self._types = [], []
        self._active = self._freed = False
        self._handle = HaloHandle(self)
        self._build(mesh)
        _LIVE.add(self)

    @property
    def array(self):
        """The tuple of local arrays (what ``wait()`` returns)."""
        return self.arrays

    def _build(self, mesh):
        from mpi4py import MPI

        _register_atexit()
        with_msgs = [(x, p) for x, p in zip(self.arrays, self.plans) if p.messages]
        self._comm = comm = mesh.group(tuple(range(mesh.ndim))) if with_msgs else None
        # per direction: [(box view, is_recv)], in field order on both sides
        directions = [m.direction for m in with_msgs[0][1].messages] if with_msgs else []
        ops = []  # (views, peer, tag, is_recv)
        # Per-field messages need distinct tags (Startall may post in any order): field i of a
        # direction's tag goes (i + 1) * span above it, if that stays below MPI's guaranteed 32767.
        span = 3 ** max((x.ndim for x in self.arrays), default=1)
        split_ok = self._coalesce is not True and _TAG_BASE + (len(self.arrays) + 1) * span < 32768
        for is_recv in (True, False):  # receives first: Startall posts them before our sends
            for k, direction in enumerate(directions):
                views, peer, tag, fields, same_both_sides = [], None, None, [], True
                for i, (x, p) in enumerate(zip(self.arrays, self.plans)):
                    if p is None or not p.messages:
                        continue
                    m = p.messages[k]
                    if m.local or not (m.receives if is_recv else m.sends):
                        continue
                    views.append(x[m.recv_box if is_recv else m.send_box])
                    fields.append(i)
                    same_both_sides &= _contiguous_for_peer(views[-1].shape, x.shape, p.sharding.sharded_dims)
                    peer, tag = m.peer, (m.recv_tag if is_recv else m.send_tag)
                if not views:
                    continue
                small = sum(v.nbytes for v in views) <= _PACK_LIMIT  # the same on both sides
                if len(views) > 1 and split_ok and (self._coalesce is False or (same_both_sides and not small)):
                    ops += [([v], peer, tag + (i + 1) * span, is_recv) for v, i in zip(views, fields)]
                else:
                    ops.append((views, peer, tag, is_recv))
        # A message of one contiguous box goes zero-copy; several boxes are packed into one
        # contiguous staging block. (An hindexed datatype on the boxes' addresses avoids the
        # copy but measured 1.2-2.3x slower than separate exchanges with MPICH; packing 0.3-0.45x.)
        staged = [v for views, _, _, _ in ops for v in views if len(views) > 1 or not v.flags.c_contiguous]
        self._staging = np.empty(sum(v.nbytes for v in staged), dtype=np.uint8)
        pos, pack, unpack = 0, [], []
        for views, peer, tag, is_recv in ops:
            if len(views) == 1 and views[0].flags.c_contiguous:
                spec = [views[0].reshape(-1).view(np.uint8), MPI.BYTE]
            else:
                start = pos
                for v in views:
                    typed = self._staging[pos:pos + v.nbytes].view(v.dtype).reshape(v.shape)
                    pos += v.nbytes
                    (unpack if is_recv else pack).append((v, typed) if is_recv else (typed, v))
                spec = [self._staging[start:pos], MPI.BYTE]
            init = comm.Recv_init if is_recv else comm.Send_init
            self._reqs.append(init(spec, peer, tag))
        self._nsends = sum(1 for op in ops if not op[3])
        self._pack = _CopyTable(pack) if pack else None
        self._unpack = _CopyTable(unpack) if unpack else None
        local = [(x[r], x[s]) for x, p in zip(self.arrays, self.plans) for r, s in p.local_copies]
        self._local = _CopyTable(local) if local else None
        self._startall = MPI.Prequest.Startall
        self._waitall = MPI.Request.Waitall

    @property
    def nsends(self) -> int:
        """MPI messages one update sends: with ``coalesce=True`` one per neighbour direction,
        whatever the number of fields."""
        return self._nsends

    start = HaloExchange.start
    wait = HaloExchange.wait  # returns the tuple of arrays
    __call__ = update = HaloExchange.__call__
    _misuse = HaloExchange._misuse
    freed = HaloExchange.freed
    free = HaloExchange.free
    __enter__ = HaloExchange.__enter__
    __exit__ = HaloExchange.__exit__

    def __repr__(self):
        state = "freed" if self._freed else f"{len(self._reqs)} persistent requests"
        return f"HaloGroupExchange({len(self.arrays)} fields, {state})"


# A direction's boxes up to this many bytes in all travel packed even when each is contiguous: below
# it a message costs mostly latency (MPICH shared memory: three packed faces of 256 doubles 5.0 us,
# one message per face 7.5 us; of 512 doubles 12.4 vs 9.3 us).
_PACK_LIMIT = 8192


def _contiguous_for_peer(box_shape, local_shape, split_dims) -> bool:
    """Whether a box is contiguous in a way its peer's matching box is too.

    Sender and receiver must agree on splitting a direction into per-field
    messages (the tags differ), yet each sees only its own local shape, which
    differs from the peer's along split dims. So a box counts as contiguous
    only if every dim after its first non-trivial one is whole and unsplit:
    a rule on shapes both sides share.

        >>> _contiguous_for_peer((2, 64), (66, 64), {0})
        True
        >>> _contiguous_for_peer((2, 64), (66, 64), {0, 1})
        False
    """
    dims = [d for d, n in enumerate(box_shape) if n != 1]
    return all(box_shape[d] == local_shape[d] and d not in split_dims for d in dims[1:])


def _check_array(x):
    if not isinstance(x, np.ndarray):
        raise CollectiveError(f"x: {type(x).__name__} is not a numpy array")
    if not x.flags.c_contiguous:
        raise CollectiveError(
            f"x: the local array (shape {x.shape}, strides {x.strides}) is not C-contiguous; "
            "halo exchange updates the buffer in place, pass the contiguous local buffer")
    if not x.flags.writeable:
        raise CollectiveError(f"x: the local array (shape {x.shape}) is read-only")
    if x.dtype.hasobject:
        raise CollectiveError(f"x: dtype {x.dtype} holds Python objects; only plain-data dtypes can be exchanged")
    return x


# ---------------------------------------------------------------------------
# the dialect's op on local arrays
# ---------------------------------------------------------------------------

# Exchanges of `update_halo`, most recently used last. Key: the array object's
# id and the call's attributes; the entry keeps the array alive, so an id is
# never reused while its entry lives, and the stored shape, dtype and data
# pointer are checked before use. An evicted exchange is freed (freeing
# persistent requests is local, so eviction needs no agreement between
# processes). A hit does no planning, no communicator work and no allocation.
_CACHE_SIZE = 64
_exchange_cache: "collections.OrderedDict" = collections.OrderedDict()


def clear_halo_cache() -> None:
    """Free every exchange cached by `update_halo`."""
    while _exchange_cache:
        _, ex = _exchange_cache.popitem()
        ex.free()


def _freeze(v):
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(i) for i in v)
    if isinstance(v, np.ndarray):
        return tuple(v.tolist())
    return v


def update_halo(x, mesh, split_axes, halo_sizes, *, periodic=None, wait=True,
                sharded_dims_offsets=None, global_shape=None):
    """Fill the halos of the local array ``x`` from its neighbours, in place.

    The shard dialect's ``update_halo`` on a local buffer.  Edge and corner
    halos are filled; halos at a non-periodic domain boundary are left
    untouched.  The global shape is not needed (message sizes follow from the
    local shape).

    Parameters
    ----------
    x : numpy.ndarray
        This process's C-contiguous local buffer (owned part plus halos on every
        sharded dim).
    mesh : Mesh
        The mesh bound to the communicator.
    split_axes : sequence of sequence of int or str
        The mesh axes splitting each tensor dim, as in `Sharding`.
    halo_sizes : sequence of int
        ``(low, high)`` halo widths of each sharded dim, flattened.
    periodic : bool or sequence of bool, optional
        A bool for every dim or one bool per dim; default False.
    wait : bool, optional
        False returns a handle whose ``.wait()`` returns ``x``.
    sharded_dims_offsets : sequence of int, optional
        The sharding's explicit shard offsets, as in `Sharding`; ``x.shape`` is
        then checked against them.
    global_shape : sequence of int, optional
        Check ``x.shape`` against this global shape.

    Returns
    -------
    numpy.ndarray or HaloHandle
        ``x`` itself, its halos filled.

    Raises
    ------
    CollectiveError
        ``mesh`` is not a `Mesh`, or ``x`` is not a C-contiguous numpy array.
    ShardingError
        The sharding fields are invalid or ``x``'s shape does not fit them (on
        every process).

    See Also
    --------
    HaloExchange, DistributedTensor.update_halo

    Notes
    -----
    The exchange (plan, persistent requests, staging buffer) is cached per array
    object and attributes (`clear_halo_cache` frees them), so repeated calls on
    the same buffer only pack, start and wait.

    Examples
    --------
    >>> from meshrt import Mesh
    >>> mesh = Mesh((-1,), ("x",))
    >>> u = np.array([0.0, 1, 2, 3, 4, 0])       # halo, 4 owned, halo
    >>> update_halo(u, mesh, [[0]], [1, 1], periodic=True)
    array([4., 1., 2., 3., 4., 1.])
    """
    key = (id(x), id(mesh), _freeze(split_axes), _freeze(halo_sizes), _freeze(periodic),
           _freeze(sharded_dims_offsets), _freeze(global_shape))
    ex = _exchange_cache.get(key)
    if ex is None or ex.array is not x or ex.freed:
        ex = _new_exchange(x, mesh, split_axes, halo_sizes, periodic, sharded_dims_offsets, global_shape)
        old = _exchange_cache.pop(key, None)
        if old is not None:
            old.free()
        _exchange_cache[key] = ex
        while len(_exchange_cache) > _CACHE_SIZE:
            _, evicted = _exchange_cache.popitem(last=False)
            evicted.free()
    else:
        _exchange_cache.move_to_end(key)
    handle = ex.start()
    if wait:
        return ex.wait()
    return handle


def _new_exchange(x, mesh, split_axes, halo_sizes, periodic, offsets, global_shape):
    if not isinstance(mesh, Mesh):
        raise CollectiveError(f"mesh: {mesh!r} is not a Mesh bound to a communicator")
    x = _check_array(x)
    s = Sharding(mesh, split_axes, halo_sizes=halo_sizes, sharded_dims_offsets=offsets)
    if global_shape is None and s.sharded_dims_offsets:
        # The offsets fix every sharded dim's size; the others are the local ones.
        ends = iter(_offset_ends(s))
        global_shape = tuple(next(ends) if s.dim_axes(d) else n for d, n in enumerate(x.shape))
    return HaloExchange(x, s, global_shape, periodic)


def _offset_ends(s: Sharding):
    flat, i, out = s.sharded_dims_offsets, 0, []
    for d in s.sharded_dims:
        i += s.dim_split_size(d) + 1
        out.append(flat[i - 1])
    return out
