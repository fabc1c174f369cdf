"""The mpi4py layer: numpy dtypes to MPI datatypes, reduction kinds to ``MPI.Op``.

The only module that knows MPI handles.  Reductions MPI lacks (float16) use
native user ops from the Cython module ``meshrt._mpiops``; ``generic``
reductions compile the user's function with Numba into a C function with the
``MPI_User_function`` signature.  Either way the op is made with the C
``MPI_Op_create`` of the MPI library mpi4py loaded (found through ctypes, so
nothing here needs ``mpi.h`` at build time), created once, cached, and freed
at exit.  MPI never calls back into Python.

>>> plan = reduce_plan("sum", np.dtype("float16"))   # doctest: +SKIP
>>> plan.dtype, plan.average                            # doctest: +SKIP
(dtype('float16'), False)
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
import threading
from typing import NamedTuple

import numpy as np
from mpi4py import MPI
from mpi4py.util.dtlib import from_numpy_dtype

from ..errors import CollectiveError
from ..reduction import Generic, ReductionKind, as_reduction

__all__ = ["mpi_datatype", "reduce_plan", "ReducePlan", "op_from_address", "native_ops_available", "free_ops",
           "internal", "current", "Peers", "note_world", "forget_world", "world_ranks", "mesh_world",
           "group_text"]

_K = ReductionKind
_lock = threading.Lock()
_datatypes: dict = {}


def mpi_datatype(dtype) -> "MPI.Datatype":
    """The predefined MPI datatype of a numpy dtype (float16 travels as 2-byte words)."""
    dtype = np.dtype(dtype)
    t = _datatypes.get(dtype)
    if t is None:
        if dtype.kind == "f" and dtype.itemsize == 2:
            # MPI has no portable half type (MPICH's MPIX_C_FLOAT16 is what mpi4py
            # infers, if present); our user ops read the bits themselves.
            t = MPI._typedict.get("e", MPI.UINT16_T)
        elif dtype.isnative and dtype.char in MPI._typedict:
            # dtlib returns duplicates, which reduction ops reject: use the predefined type
            t = MPI._typedict[dtype.char]
        else:
            try:
                t = from_numpy_dtype(dtype)
            except Exception:
                raise CollectiveError(f"dtype: {dtype} has no MPI datatype") from None
        _datatypes[dtype] = t
    return t


# -- MPI_Op_create through ctypes ------------------------------------------------------
_USER_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_void_p)
_op_create = None
_created_ops: list = []
_keepalive: list = []


def _find_op_create():
    """``MPI_Op_create`` from the MPI library already loaded by mpi4py, or None."""
    candidates = [None]  # the global namespace (libmpi loaded RTLD_GLOBAL)
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if ".so" in line}
        candidates += sorted(p for p in paths if "mpi" in os.path.basename(p).lower() and "mpi4py" not in p)
    except OSError:  # not Linux: ask the loader by name
        for name in ("mpi", "mpi_abi", "mpich", "msmpi"):
            path = ctypes.util.find_library(name)
            if path:
                candidates.append(path)
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
            fn = lib.MPI_Op_create
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        return fn
    return None


def native_ops_available() -> bool:
    """Whether user ops can be made from C function addresses in this MPI."""
    global _op_create
    if _op_create is None:
        _op_create = _find_op_create() or False
    return bool(_op_create)


def op_from_address(address: int, commute: bool = True, keepalive=None) -> "MPI.Op":
    """An ``MPI.Op`` whose body is the C ``MPI_User_function`` at ``address``."""
    if not native_ops_available():
        raise CollectiveError("reduction: cannot find MPI_Op_create in the loaded MPI library")
    size = MPI._sizeof(MPI.Op)
    handle = (ctypes.c_byte * size)()
    err = _op_create(ctypes.c_void_p(address), int(bool(commute)), ctypes.byref(handle))
    if err != 0:
        raise CollectiveError(f"reduction: MPI_Op_create failed with error {err}")
    op = MPI.Op.fromhandle(int.from_bytes(bytes(handle), "little" if np.little_endian else "big"))
    _created_ops.append(op)
    if keepalive is not None:
        _keepalive.append(keepalive)
    return op


@atexit.register
def free_ops() -> None:
    """Free every op created here (runs before mpi4py finalizes MPI: atexit is LIFO)."""
    while _created_ops:
        op = _created_ops.pop()
        try:
            if not MPI.Is_finalized():
                op.Free()
        except Exception:
            pass


# -- reduction plans ---------------------------------------------------------------------
class ReducePlan:
    """How to reduce one dtype with one kind: ``op`` over ``datatype`` on buffers of ``dtype``."""

    __slots__ = ("kind", "dtype", "datatype", "op", "average", "direct")

    def __init__(self, kind, dtype, datatype, op, average=False):
        self.kind, self.dtype, self.datatype, self.op, self.average = kind, dtype, datatype, op, average
        # mpi4py infers this same datatype from the array itself: pass bare arrays (faster)
        self.direct = MPI._typedict.get(dtype.char) is datatype

    def __repr__(self):
        return f"ReducePlan({self.kind!s}, {self.dtype}, average={self.average})"


_plans: dict = {}
_BUILTIN = {_K.sum: MPI.SUM, _K.product: MPI.PROD, _K.max: MPI.MAX, _K.min: MPI.MIN,
            _K.bitwise_and: MPI.BAND, _K.bitwise_or: MPI.BOR, _K.bitwise_xor: MPI.BXOR,
            _K.average: MPI.SUM}
# numpy's meaning of each kind on bool: add is or, multiply is and, max is or ...
_BOOL = {_K.sum: MPI.LOR, _K.product: MPI.LAND, _K.max: MPI.LOR, _K.min: MPI.LAND,
         _K.bitwise_and: MPI.LAND, _K.bitwise_or: MPI.LOR, _K.bitwise_xor: MPI.LXOR}
_REDUCIBLE = "biufc"


def reduce_plan(reduction, dtype) -> ReducePlan:
    """The cached `ReducePlan` for ``reduction`` (a kind, its name, a `Generic` or a function)."""
    key = (reduction, dtype)
    try:
        return _plans[key]
    except KeyError:
        pass
    except TypeError:  # unhashable reduction: not cached under this key
        key = None
    with _lock:
        plan = _make_plan(as_reduction(reduction), _as_dtype(dtype))
        if key is not None:
            _plans[key] = plan
        return plan


def _as_dtype(dtype) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError:
        raise CollectiveError(f"dtype: {dtype!r} is not a numpy dtype") from None


def _make_plan(red, dtype: np.dtype) -> ReducePlan:
    if dtype.kind not in _REDUCIBLE or dtype.byteorder == (">" if np.little_endian else "<"):
        raise CollectiveError(f"dtype: cannot reduce {dtype}; expected a native bool, int, uint, float or complex type")
    if isinstance(red, Generic):
        return ReducePlan(_K.generic, dtype, mpi_datatype(dtype), _generic_op(red.fn, dtype, red.commute))
    kind = red
    k = dtype.kind
    if kind in (_K.bitwise_and, _K.bitwise_or, _K.bitwise_xor) and k in "fc":
        raise CollectiveError(f"reduction: {kind.value} is not defined for {dtype}; it needs an int, uint or bool dtype")
    if kind in (_K.max, _K.min) and k == "c":
        raise CollectiveError(f"reduction: {kind.value} is not defined for {dtype}; complex numbers are not ordered")
    if kind is _K.average and k == "b":
        raise CollectiveError(f"reduction: average is not defined for {dtype}; pass dtype= an int or float type")
    average = kind is _K.average
    if k == "b":
        return ReducePlan(kind, dtype, mpi_datatype(dtype), _BOOL[kind])
    if k == "f" and dtype.itemsize == 2:
        return ReducePlan(kind, dtype, mpi_datatype(dtype), _half_op(_K.sum if average else kind), average)
    return ReducePlan(kind, dtype, mpi_datatype(dtype), _BUILTIN[kind], average)


_half_ops: dict = {}


def _half_op(kind) -> "MPI.Op":
    op = _half_ops.get(kind)
    if op is None:
        try:
            from .. import _mpiops
        except ImportError:
            _mpiops = None
        if _mpiops is not None and native_ops_available():
            op = op_from_address(_mpiops.addresses()[f"float16:{kind.value}"], True)
        else:  # not built or no MPI_Op_create: a numpy callback, correct but slower
            op = _python_half_op(kind)
        _half_ops[kind] = op
    return op


def _python_half_op(kind) -> "MPI.Op":
    ufunc = {_K.sum: np.add, _K.product: np.multiply, _K.max: np.maximum, _K.min: np.minimum}[kind]

    def body(inbuf, inoutbuf, datatype):
        a = np.frombuffer(inbuf, np.float16)
        b = np.frombuffer(inoutbuf, np.float16)
        ufunc(a, b, out=b)

    op = MPI.Op.Create(body, commute=True)
    _created_ops.append(op)
    return op


_generic_ops: dict = {}


def _reduce_ops():
    try:
        from ..kernels import reduce_ops
    except ImportError:  # a source checkout: kernels/ is not yet mapped to meshrt.kernels
        from kernels import reduce_ops
    return reduce_ops


def _generic_op(fn, dtype: np.dtype, commute: bool) -> "MPI.Op":
    key = (fn, dtype, commute)
    op = _generic_ops.get(key)
    if op is None:
        reduce_ops = _reduce_ops()
        if native_ops_available():
            cf = reduce_ops.user_function(fn, dtype)
            op = op_from_address(cf.address, commute, keepalive=cf)
        else:  # no C MPI_Op_create reachable: one Python call per chunk, not per element
            kernel = reduce_ops.combine_kernel(fn, dtype)

            def body(inbuf, inoutbuf, datatype):
                kernel(np.frombuffer(inbuf, dtype), np.frombuffer(inoutbuf, dtype))

            op = MPI.Op.Create(body, commute=commute)
            _created_ops.append(op)
        _generic_ops[key] = op
    return op


# -- meshrt's own MPI calls, named for the watchdog --------------------------------------
# Every communicator call meshrt makes outside the collectives (agreements, checks, a
# planner's size exchange, communicator creation...) runs inside ``internal``, so that the
# watchdog and ``meshrt run`` can say which operation a blocked process is in and over
# which processes (tests/test_internal_calls.py finds any call that is not).
_current = None
_WORLD_SIZE, _WORLD_RANK = MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank()  # read here: no MPI call later
_world_of: dict = {}  # communicator handle -> the COMM_WORLD ranks of its processes (meshrt's own)


class _Internal:
    """Mark the MPI calls inside the ``with`` block as step ``step`` of meshrt operation
    ``op`` over ``group`` (a Mesh, ``(mesh, mesh axes)`` or a communicator).

    The compiled `meshrt._collfront.internal` is this, at about a third of the cost (two
    global assignments and a tuple); the watchdog reads the mark (`current`) only when the
    process has been in one place for a while.

    >>> with internal("DistributedTensor.zeros", "agreement", None):
    ...     current()[:2]
    ('DistributedTensor.zeros', 'agreement')
    >>> current() is None
    True
    """

    __slots__ = ("mark", "prev")

    def __init__(self, op: str, step: str, group):
        self.mark = (op, step, group)

    def __enter__(self):
        global _current
        self.prev, _current = _current, self.mark
        return self

    def __exit__(self, *exc):
        global _current
        _current = self.prev


def _current_py():
    """``(op, step, group)`` of the `internal` block the main thread is in, or None."""
    return _current


try:
    from .._collfront import current_internal as current, internal
except ImportError:  # an unbuilt checkout (meshrt's import says so): the same in Python
    internal, current = _Internal, _current_py


class Peers(NamedTuple):
    """The group of a point-to-point step: the devices of ``mesh`` it exchanges with (itself
    included), so that only those count as waited on."""

    mesh: object
    devices: tuple


def note_world(comm, ranks) -> None:
    """Remember the COMM_WORLD ranks of a communicator meshrt created (for `world_ranks`)."""
    _world_of[comm.handle] = tuple(ranks)


def forget_world(comm) -> None:
    """Forget a communicator about to be freed (MPI may reuse its handle)."""
    _world_of.pop(comm.handle, None)


def world_ranks(group):
    """The COMM_WORLD ranks of ``group``'s processes, in its order, or None where meshrt
    cannot know them without asking MPI (a communicator the program made itself).

    ``group`` is a Mesh, ``(mesh, mesh axes)``, or a communicator.
    """
    if group is None:
        return None
    if type(group) is Peers:
        world = world_ranks(group.mesh)
        return None if world is None else tuple(world[d] for d in group.devices)
    if isinstance(group, tuple):
        mesh, axes = group
        world = world_ranks(mesh)
        if world is None:
            return None
        return tuple(world[d] for d in mesh.group_devices(axes))
    comm = getattr(group, "comm", None)
    if comm is not None and hasattr(group, "group_devices"):  # a Mesh
        world = getattr(group, "world", None)
        return world if world is not None else world_ranks(comm)
    if not isinstance(group, MPI.Comm) or group == MPI.COMM_NULL:
        return None
    if group == MPI.COMM_WORLD:
        return tuple(range(_WORLD_SIZE))
    if group == MPI.COMM_SELF:
        return (_WORLD_RANK,)
    return _world_of.get(group.handle)


def mesh_world(comm):
    """The COMM_WORLD ranks of ``comm``'s processes (a local MPI call, made once per Mesh);
    None for an object that is not an mpi4py communicator."""
    if not isinstance(comm, MPI.Comm):
        return None
    known = world_ranks(comm)
    if known is not None:
        return known
    group, world = comm.Get_group(), MPI.COMM_WORLD.Get_group()
    try:
        return tuple(int(r) for r in MPI.Group.Translate_ranks(group, list(range(group.Get_size())), world))
    finally:
        group.Free()
        world.Free()


def group_text(group) -> str:
    """``mesh (2, 2)``, ``mesh (2, 2) axes (1,)``, ``mesh (4,) devices [1, 2]``, ``COMM_WORLD``
    or ``a communicator of N processes``."""
    if type(group) is Peers:
        return f"mesh {tuple(group.mesh.shape)} devices {list(group.devices)}"
    if isinstance(group, tuple):
        mesh, axes = group
        return f"mesh {tuple(mesh.shape)} axes {tuple(mesh.axes(axes))}"
    if hasattr(group, "group_devices"):
        return f"mesh {tuple(group.shape)}"
    if isinstance(group, MPI.Comm) and group != MPI.COMM_NULL:
        if group == MPI.COMM_WORLD:
            return "COMM_WORLD"
        world = world_ranks(group)  # no MPI call: this runs in the watchdog's thread
        return "a communicator meshrt did not create" if world is None else f"a communicator of {len(world)} processes"
    return "its processes"
