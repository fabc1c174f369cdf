"""`DistributedTensor`: a global array sharded over a `Mesh`, one block per process.

Each process holds its owned block plus the sharding's halos in one
C-contiguous buffer (``.local``); ``.interior`` is the owned part, a view.

>>> mesh = Mesh((-1,))                                       # doctest: +SKIP
>>> s = Sharding(mesh, [[0]], halo_sizes=[1, 1])             # doctest: +SKIP
>>> t = DistributedTensor.from_function(lambda i: i * 1.0, (8,), s)  # doctest: +SKIP
>>> t.update_halo(); float(t.sum()), (2 * t + 1).gather()[:3]        # doctest: +SKIP
(28.0, array([1., 3., 5.]))

Halos of a new tensor are zero (on boundary shards they are ghost cells, so a
stencil sees homogeneous Dirichlet values unless the program writes them);
`update_halo` fills the others.  Elementwise numpy ufuncs compute on the
interiors only, so a result's halos are zero (``out=`` leaves the target's
halos as they were): call ``update_halo()`` before a stencil reads them.
Computing on interiors keeps numpy's floating-point warnings exact (a zero
halo under ``1 / t`` would warn where the global array does not).

Global view: ``t[key]`` and ``t[key] = value`` take numpy's basic keys on
the global array (slices are views with uneven ``sharded_dims_offsets``;
writes leave halos stale until ``update_halo``), and the numpy functions
registered with `implements` (layout ops, ``where``, ``clip``, ``cumsum``,
``linalg.norm``, ...) work on tensors; any other raises TypeError.
"""

from __future__ import annotations

import math
import numbers
import operator
import os
import sys
import warnings

import numpy as np
import numpy.lib.mixins

from ..runtime import check as _check, mpi as _mpi
from .. import collectives
from ..halo import HaloExchange
from .._blockcopy import copy_block, extract, insert
from ..collectives.common import _DIRECT_DTYPES
from .._keys import ScalarWrites, install_setitem, int_key, key_id as _key_id
from .._slots import install as _install_slots, tensor as _new_tensor
from ..errors import PerformanceWarning, ShardingError
from ..reshard import execute_reshard, plan_reshard, same_devices
from ..sharding.spec import Sharding
from .dispatch import ABOVE, _HANDLED_FUNCTIONS, _np_name
from .layout import (
    _ALLGATHERS, _agree, _axes_tuple, _block_layout, _check_global, _check_perm, _check_root, _check_sharding,
    _checked_layout, _displs, _from_dims, _gather_layout, _normalize_periodic, _permute_sharding,
    _reshape_groups, _reshape_target, _to_view_index, _zero_halos,
)
from .array_object import _ArrayAPIObject
from .files import _TensorFiles
from .index_exec import _drop_ints, _flip, _index_plan, _to_view_layout
from .reductions import _TensorReductions, _accumulate
from .._compiled import fresh

fresh("meshrt.tensor.ufunc")  # (compiled by setup.py: a 0-d value's arithmetic; its source where the build is stale)
from .ufunc import (  # noqa: E402
    _SCALARS, _check_partial_ufunc, _check_same, _fast_ufunc, _mixed_operands, _result_dtypes)
from .dispatch import implements  # noqa: F401  (re-exported: tests register handlers through it)

__all__ = ["DistributedTensor"]



class DistributedTensor(_TensorFiles, _TensorReductions, _ArrayAPIObject, numpy.lib.mixins.NDArrayOperatorsMixin):
    """A global array of ``global_shape`` laid out by ``sharding`` on a `Mesh`.

    Build one with the class methods (`from_global`, `zeros`, `empty`, `full`,
    `from_function`, `from_local`) rather than the constructor.  Every process
    must make the same calls in the same order (SPMD), with equal scalars.
    numpy works on it: elementwise ufuncs and operators, reductions
    (``np.sum(t)``), ``@``, ``np.einsum`` and more, each planned and run with the
    shard dialect's collectives.

    ``periodic`` (None, a bool, or one bool per tensor dim) tells
    `update_halo` which sharded dims wrap around; the dialect has no word for
    it, so it is a property of the tensor, not of its sharding.

    Parameters
    ----------
    local : numpy.ndarray
        This process's buffer, owned block plus halos, of shape
        ``sharding.local_shape(global_shape)`` (not checked here: use
        `from_local`).
    sharding : Sharding
        The layout, on a `Mesh`.
    global_shape : sequence of int
        The global array's shape.
    periodic : bool or sequence of bool, optional
        Which dims wrap around in halo updates.

    Raises
    ------
    ShardingError
        ``sharding`` is not a `Sharding` on a `Mesh`, or cannot shard
        ``global_shape``.

    See Also
    --------
    Sharding, Mesh, explain_op, explain_reshard

    Examples
    --------
    >>> from meshrt import Mesh, Sharding
    >>> rows = Sharding(Mesh((-1,), ("x",)), [["x"]], halo_sizes=[1, 1])
    >>> t = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), rows)
    >>> t.shape, t.local.shape, t.interior.shape       # 2 halo rows in local
    ((3, 2), (5, 2), (3, 2))
    >>> (2 * t + 1).sum()
    np.float64(36.0)
    """

    __slots__ = ("_local", "_sharding", "_global_shape", "_periodic", "_interior", "_slices", "_halo", "_writes",
                 "_expr")  # _expr: a deferred expression's (meshrt.tensor.lazy.LazyTensor)

    def __init__(self, local: np.ndarray, sharding: Sharding, global_shape, *, periodic=None):
        self._sharding = _check_sharding(sharding)
        self._global_shape, layout = _checked_layout(sharding, global_shape)
        self._local = local
        self._periodic = _normalize_periodic(periodic, len(self._global_shape))
        self._slices = layout.slices
        self._interior = local[layout.index]
        self._halo = self._writes = None

    @classmethod
    def _fast(cls, local, interior, sharding, shape, slices, periodic) -> "DistributedTensor":
        # The elementwise fast path: every argument already validated (a sibling tensor's).
        return _new_tensor(cls, local, interior, sharding, shape, slices, periodic)

    # -- creation --------------------------------------------------------------------
    @classmethod
    @_check.creation("from_local", data=("local",))
    def from_local(cls, local, sharding: Sharding, global_shape, *, dtype=None, periodic=None) -> "DistributedTensor":
        """Wrap this process's existing buffer (owned block plus halos), without copying.

        Every process checks its own buffer and the verdicts are shared, so a wrong
        buffer anywhere raises everywhere.

        Parameters
        ----------
        local : numpy.ndarray
            This process's C-contiguous buffer of shape
            ``sharding.local_shape(global_shape)``.
        sharding : Sharding
            The layout, on a `Mesh`.
        global_shape : sequence of int
            The global array's shape.
        dtype : numpy.dtype, optional
            If given, ``local`` must have it.
        periodic : bool or sequence of bool, optional
            Which dims wrap around in halo updates.

        Returns
        -------
        DistributedTensor
            A tensor whose ``local`` is ``local`` itself.

        Raises
        ------
        ShardingError
            On every process: some process's buffer has the wrong shape or dtype,
            or is not C-contiguous; or the sharding does not fit.

        See Also
        --------
        from_global, spmd

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]], halo_sizes=[1, 1])
        >>> buf = np.array([0.0, 1, 2, 3, 0])
        >>> t = DistributedTensor.from_local(buf, s, (3,))
        >>> t.local is buf, t.gather()
        (True, array([1., 2., 3.]))
        """
        sharding = _check_sharding(sharding)
        shape = sharding.check_shape(global_shape)
        error = None
        want = sharding.local_shape(shape)
        if not isinstance(local, np.ndarray):
            error = f"local: expected a numpy.ndarray, got {type(local).__name__}"
        elif local.shape != want:
            error = (f"local: shape {local.shape}, but {sharding} gives global shape {shape} a local shape "
                     f"(owned block plus halos) of {want}")
        elif not local.flags.c_contiguous:
            error = f"local: the buffer must be C-contiguous, got strides {local.strides} for shape {local.shape}"
        elif dtype is not None and np.dtype(dtype) != local.dtype:
            error = f"dtype: local buffer has dtype {local.dtype}, but dtype={np.dtype(dtype)} was asked for"
        _agree(sharding.mesh, error, "DistributedTensor.from_local")
        return cls(local, sharding, shape, periodic=periodic)

    @classmethod
    @_check.creation("empty")
    def empty(cls, global_shape, sharding: Sharding, dtype=np.float64, *, periodic=None) -> "DistributedTensor":
        """A tensor with an uninitialized interior (halos are zero).

        Parameters
        ----------
        global_shape : sequence of int
            The global array's shape.
        sharding : Sharding
            The layout, on a `Mesh`.
        dtype : numpy.dtype, optional
            Default ``float64``.
        periodic : bool or sequence of bool, optional
            Which dims wrap around in halo updates.

        Returns
        -------
        DistributedTensor
            The new tensor.

        Raises
        ------
        ShardingError
            The sharding is not on a `Mesh` or cannot shard ``global_shape``.

        See Also
        --------
        zeros, full

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.empty((4, 3), Sharding(Mesh((-1,)), [[0]]), np.int32)
        >>> t.shape, t.dtype
        ((4, 3), dtype('int32'))
        """
        sharding = _check_sharding(sharding)
        shape, layout = _checked_layout(sharding, global_shape)
        local = np.empty(layout.local_shape, dtype=dtype)
        if layout.halos:
            _zero_halos(local, sharding, shape)
        return cls._fast(local, local[layout.index], sharding, shape, layout.slices,
                         _normalize_periodic(periodic, len(shape)))

    @classmethod
    @_check.creation("zeros")
    def zeros(cls, global_shape, sharding: Sharding, dtype=np.float64, *, periodic=None) -> "DistributedTensor":
        """A tensor of zeros.

        Parameters
        ----------
        global_shape : sequence of int
            The global array's shape.
        sharding : Sharding
            The layout, on a `Mesh`.
        dtype : numpy.dtype, optional
            Default ``float64``.
        periodic : bool or sequence of bool, optional
            Which dims wrap around in halo updates.

        Returns
        -------
        DistributedTensor
            The new tensor (halos zero too).

        Raises
        ------
        ShardingError
            The sharding is not on a `Mesh` or cannot shard ``global_shape``.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.zeros((3,), Sharding(Mesh((-1,)), [[0]])).gather()
        array([0., 0., 0.])
        """
        sharding = _check_sharding(sharding)
        shape, layout = _checked_layout(sharding, global_shape)
        local = np.zeros(layout.local_shape, dtype=dtype)
        return cls._fast(local, local[layout.index], sharding, shape, layout.slices,
                         _normalize_periodic(periodic, len(shape)))

    @classmethod
    @_check.creation("full", data=("fill_value",))
    def full(cls, global_shape, sharding: Sharding, fill_value, dtype=None, *, periodic=None) -> "DistributedTensor":
        """A tensor whose every element is ``fill_value`` (halos zero).

        Parameters
        ----------
        global_shape : sequence of int
            The global array's shape.
        sharding : Sharding
            The layout, on a `Mesh`.
        fill_value : scalar
            The value, the same on every process.
        dtype : numpy.dtype, optional
            Default: numpy's type for ``fill_value``.
        periodic : bool or sequence of bool, optional
            Which dims wrap around in halo updates.

        Returns
        -------
        DistributedTensor
            The new tensor.

        Raises
        ------
        ShardingError
            The sharding is not on a `Mesh` or cannot shard ``global_shape``.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.full((2,), Sharding(Mesh((-1,)), []), 7).gather()
        array([7, 7])
        """
        if dtype is None:
            dtype = np.asarray(fill_value).dtype
        t = cls.empty(global_shape, sharding, dtype, periodic=periodic)
        t._interior[...] = fill_value
        return t

    @classmethod
    @_check.creation("from_function", data=("fn",))
    def from_function(cls, fn, global_shape, sharding: Sharding, dtype=np.float64, *, sparse=False,
                      periodic=None) -> "DistributedTensor":
        """Fill the owned block with ``fn(*indices)``, like `numpy.fromfunction`.

        No communication: each process evaluates ``fn`` on its own block only.

        Parameters
        ----------
        fn : callable
            Called with one integer array of *global* indices per dim
            (``np.indices`` shifted by the block's offset); the result is
            broadcast to the block's shape.
        global_shape : sequence of int
            The global array's shape.
        sharding : Sharding
            The layout, on a `Mesh`.
        dtype : numpy.dtype, optional
            Default ``float64``.
        sparse : bool, optional
            Pass open grids as ``np.ogrid`` does (saves memory).
        periodic : bool or sequence of bool, optional
            Which dims wrap around in halo updates.

        Returns
        -------
        DistributedTensor
            The new tensor (halos zero).

        Raises
        ------
        ShardingError
            The sharding is not on a `Mesh` or cannot shard ``global_shape``.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
        >>> DistributedTensor.from_function(lambda i, j: 10 * i + j, (3, 2), s).gather()
        array([[ 0.,  1.],
               [10., 11.],
               [20., 21.]])
        """
        t = cls.empty(global_shape, sharding, dtype, periodic=periodic)
        block_shape = t._interior.shape
        idx = np.indices(block_shape, sparse=sparse)
        idx = tuple(ix + sl.start for ix, sl in zip(idx, t._slices))
        t._interior[...] = np.broadcast_to(np.asarray(fn(*idx)), block_shape)
        return t

    @classmethod
    @_check.creation("from_global", data=("array",))
    def from_global(cls, array, sharding: Sharding, root=None, *, global_shape=None, dtype=None,
                    periodic=None) -> "DistributedTensor":
        """Shard a full array.

        With ``root=None`` every process passes the same array and copies its
        own block out of it (no communication).  With ``root`` (a mesh linear
        index) only that process's ``array`` is read (the others may pass
        None): its shape and dtype are broadcast first, so a bad array raises
        the same error everywhere, then each device's block is packed with the
        compiled block copy and sent with one ``Scatterv`` (the root's send
        buffer holds every device's block, replicas included).

        Parameters
        ----------
        array : array_like or None
            The global array (None allowed off ``root``).
        sharding : Sharding
            The layout, on a `Mesh`.
        root : int, optional
            The linear device index holding the only copy of ``array``.
        global_shape : sequence of int, optional
            Check the array's shape against this one.
        dtype : numpy.dtype, optional
            Convert to this type; default the array's.
        periodic : bool or sequence of bool, optional
            Which dims wrap around in halo updates.

        Returns
        -------
        DistributedTensor
            The new tensor (halos zero until `update_halo`).

        Raises
        ------
        ShardingError
            The sharding is not on a `Mesh`, cannot shard the array's shape, the
            shape differs from ``global_shape``, or ``root``'s array is bad (raised
            on every process).

        See Also
        --------
        gather, from_local

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
        >>> t = DistributedTensor.from_global(np.arange(4), s)
        >>> t.shard_slices, t.interior
        ((slice(0, 4, None),), array([0, 1, 2, 3]))
        >>> DistributedTensor.from_global(np.arange(4), s, root=0).gather()
        array([0, 1, 2, 3])
        """
        sharding = _check_sharding(sharding)
        mesh = sharding.mesh
        if root is None:
            arr = error = None
            try:
                arr = _as_array(array, dtype)
                shape = _check_global(arr.shape, arr.dtype, sharding, global_shape)
            except ShardingError as e:
                error = str(e)
            _agree(mesh, error, "DistributedTensor.from_global")
            # every process must pass the same array: at least its shape and dtype must agree
            with _mpi.internal("DistributedTensor.from_global", "shape agreement", mesh):
                metas = mesh.comm.allgather((arr.shape, arr.dtype.str))
            differ = [d for d, m in enumerate(metas) if m != metas[0]]
            if differ:
                raise ShardingError(
                    f"array: every process must pass the same global array, but device 0 has shape/dtype "
                    f"{metas[0]} and device{'s' if len(differ) > 1 else ''} {differ} "
                    f"{[metas[d] for d in differ]}; pass root= to scatter from one process"
                )
            t = cls.empty(shape, sharding, arr.dtype, periodic=periodic)
            copy_block(t._interior, arr[t._slices + (Ellipsis,)])  # Ellipsis: a 0-d block stays an array
            return t

        root = _check_root(root, mesh)
        comm = mesh.comm
        meta = err = None
        if mesh.rank == root:
            try:
                arr = _as_array(array, dtype)
                meta = (arr.shape, arr.dtype.str)
            except ShardingError as e:
                err = str(e)
        with _mpi.internal("DistributedTensor.from_global", "shape from the root", mesh):
            meta, err = comm.bcast((meta, err), root=root)
        if err is not None:
            raise ShardingError(err)
        shape, dt = tuple(meta[0]), np.dtype(meta[1])
        shape = _check_global(shape, dt, sharding, global_shape)
        t = cls.empty(shape, sharding, dt, periodic=periodic)

        if mesh.rank == root:  # only the root needs every device's count (Scatterv)
            starts, sizes = _block_layout(sharding, shape)
            counts = sizes.prod(axis=1) * dt.itemsize
            displs = _displs(counts)
            sendbuf = np.empty(int(counts.sum()), np.uint8)
            for d in np.flatnonzero(counts):
                block = sendbuf[displs[d]: displs[d] + counts[d]].view(dt).reshape(sizes[d])
                extract(arr, tuple(slice(a, a + n) for a, n in zip(starts[d], sizes[d])), out=block)
            send = [sendbuf, (counts, displs)]
        else:
            send = None
        recv = np.empty(math.prod(t._interior.shape) * dt.itemsize, np.uint8)
        with _mpi.internal("DistributedTensor.from_global", "scatter from the root", mesh):
            comm.Scatterv(send, recv, root=root)
        if recv.size:
            copy_block(t._interior, recv.view(dt).reshape(t._interior.shape))
        return t

    # -- views ---------------------------------------------------------------------------
    local = property(lambda self: _touch(self)._local,
                     doc="This process's buffer (owned block plus halos), C-contiguous.")
    interior = property(lambda self: _touch(self)._interior, doc="The owned block, a view into `local`.")
    sharding = property(lambda self: self._sharding, doc="The tensor's `Sharding`.")
    global_shape = property(lambda self: self._global_shape, doc="The shape of the whole (global) array, a tuple.")
    shape = global_shape
    shard_slices = property(lambda self: self._slices, doc="The owned block as slices of the global array.")
    periodic = property(lambda self: self._periodic, doc="Per tensor dim, whether halos wrap around (or None).")
    mesh = property(lambda self: self._sharding.mesh, doc="The sharding's mesh.")
    dtype = property(lambda self: self._local.dtype, doc="The element type (numpy dtype).")
    ndim = property(lambda self: len(self._global_shape), doc="The number of global dims.")
    size = property(lambda self: math.prod(self._global_shape), doc="The number of elements of the global array.")

    def __len__(self):
        if not self._global_shape:
            raise TypeError("len() of a 0-d DistributedTensor")
        return self._global_shape[0]

    def __repr__(self):
        rng = ", ".join(f"{s.start}:{s.stop}" for s in self._slices)
        return (
            f"DistributedTensor(shape={self._global_shape}, dtype={self.dtype}, sharding=<{self._sharding}>, "
            f"device {self.mesh.rank} {self.mesh.coords} holds [{rng}] in local {self._local.shape})"
        )

    def __array__(self, dtype=None, copy=None):
        """The global array (``np.asarray(t)``, ``np.array(t)``, ``A[...] = t``).

        A fully replicated tensor is its block on every process: returned without communication.  A split
        or partial one is gathered on every process (one allgather, the same array everywhere) with a
        `PerformanceWarning` naming the call site, once per call site; ``MESHRT_IMPLICIT_GATHER=error``
        raises `TypeError` instead.
        """
        s = self._sharding
        if any(s.split_axes) or s.is_partial:
            if copy is False:
                raise ValueError(f"np.asarray(copy=False): a tensor sharded <{s}> is gathered, which copies")
            block = _implicit_gather(self, "a conversion to a numpy array (np.asarray, np.array, A[...] = t)")
            return block if dtype is None or np.dtype(dtype) == block.dtype else block.astype(dtype)
        block = self._interior
        if dtype is not None and np.dtype(dtype) != block.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(copy=False): the tensor is {block.dtype}, {np.dtype(dtype)} asked for")
            return block.astype(dtype)
        return block.copy() if copy else block

    def __iter__(self):
        """Over the first axis, as numpy's: rows of the global array (a split tensor: gathered once, as
        `__array__`)."""
        if not self._global_shape:
            raise TypeError("iteration over a 0-d DistributedTensor")
        s = self._sharding
        if any(s.split_axes) or s.is_partial:
            return iter(_implicit_gather(self, "iter()"))
        return iter(self._interior)

    def _scalar(self, what):
        """The value of a 0-d tensor (replicated: the same on every process; a partial one is reduced)."""
        if self._global_shape:
            raise TypeError(f"{what}: only a 0-d DistributedTensor converts to a Python scalar, this one has "
                            f"shape {self._global_shape}; reduce it (t.sum(), t.max(), ...) or gather() first")
        return self._full_interior()[()]

    def item(self, *args):
        """The value of a 0-d tensor as a Python scalar, on every process.

        ``float(t[1, 1])`` works too.

        Returns
        -------
        int or float or complex or bool
            The element.

        Raises
        ------
        TypeError
            The tensor is not 0-d (reduce or index it first).

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), Sharding(Mesh((-1,)), [[0]]))
        >>> t[1, 1].item()
        3.0
        """
        if args:  # t.item(i) / t.item(i, j): one element, from its owner
            key = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
            if len(key) == 1 and self.ndim != 1:
                key = np.unravel_index(operator.index(key[0]), self._global_shape)
            return self[tuple(int(i) for i in key)].item()
        return self._scalar("item()").item()

    def __float__(self):
        if not self._global_shape and not self._sharding._partial_axes:  # (the common case, without calls)
            return float(self._interior[()])
        return float(self._scalar("float()"))

    def __int__(self):
        return int(self._scalar("int()"))

    def __complex__(self):
        return complex(self._scalar("complex()"))

    def __index__(self):
        value = self._scalar("operator.index()")
        if self.dtype.kind not in "biu":
            raise TypeError(f"operator.index(): a {self.dtype} tensor is not an integer")
        return int(value)

    def __matmul__(self, other):
        if isinstance(other, DistributedTensor) and ABOVE.fast is not None:
            r = ABOVE.fast.matmul_1d(self, other)  # two vectors: one local dot and one allreduce, no plan
            if r is not None:
                return r
        return _HANDLED_FUNCTIONS[np.matmul](self, other)  # meshrt.tensor.matmul.matmul, registered by tensor/matmul.py

    def __rmatmul__(self, other):
        return _HANDLED_FUNCTIONS[np.matmul](other, self)

    def __bool__(self):
        if self._global_shape:
            raise TypeError(f"DistributedTensor: the truth value of a tensor of shape {self._global_shape} is "
                            "ambiguous; use np.any(t) / np.all(t)")
        return bool(self._scalar("bool()"))

    def copy(self) -> "DistributedTensor":
        """A new tensor with a copy of the local buffer (halos included).

        Returns
        -------
        DistributedTensor
            The copy, with the same sharding and ``periodic``.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.zeros((2,), Sharding(Mesh((-1,)), [[0]]))
        >>> c = t.copy()
        >>> c.local is t.local, c.sharding == t.sharding
        (False, True)
        """
        return DistributedTensor(self._local.copy(), self._sharding, self._global_shape, periodic=self._periodic)

    def astype(self, dtype) -> "DistributedTensor":
        """A copy converted to ``dtype`` (halos included).

        Parameters
        ----------
        dtype : numpy.dtype
            The new type.

        Returns
        -------
        DistributedTensor
            The converted copy.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.full((2,), Sharding(Mesh((-1,)), [[0]]), 1.5).astype(np.int32).gather()
        array([1, 1], dtype=int32)
        """
        if ABOVE.lazy is not None:
            lazy = ABOVE.lazy.astype(self, dtype)
            if lazy is not None:
                return lazy
        return DistributedTensor(self._local.astype(dtype), self._sharding, self._global_shape, periodic=self._periodic)

    # numpy's ndarray methods that programs call in passing, by the numpy functions they stand for
    def ravel(self, order="C") -> "DistributedTensor":
        """``np.ravel(t)``: the tensor flattened in C order (see `reshape`)."""
        return _HANDLED_FUNCTIONS[np.ravel](self, order)

    flatten = ravel

    def dot(self, b):
        """``np.dot(t, b)``."""
        return _HANDLED_FUNCTIONS[np.dot](self, b)

    def fill(self, value) -> None:
        """``t[...] = value``."""
        self[...] = value

    def conj(self) -> "DistributedTensor":
        """``np.conjugate(t)``."""
        return np.conjugate(self)

    conjugate = conj
    real = property(lambda self: _HANDLED_FUNCTIONS[np.real](self), doc="``np.real(t)`` (a copy).")
    imag = property(lambda self: _HANDLED_FUNCTIONS[np.imag](self), doc="``np.imag(t)`` (a copy).")

    def tolist(self):
        """The global array as nested Python lists, on every process (a gather)."""
        return self.gather().tolist()

    # -- indexing ------------------------------------------------------------------------------
    def __getitem__(self, key) -> "DistributedTensor":
        """``t[key]`` with numpy's basic indexing on the global array: ints, slices, ``...``, ``None``.

        Slices with positive steps move no data: the result is a view of each
        process's block, its sharding's ``sharded_dims_offsets`` say who holds
        what.  An int on a split dim drops it; the result is replicated over
        that dim's mesh axes (one broadcast from the owner).  A negative step on
        a split dim swaps blocks between mirror devices (one Sendrecv).  The
        result has no halos, and a view's ``local`` is a strided numpy view.

        >>> u[1:-1, ::2].sharding.sharded_dims_offsets      # doctest: +SKIP
        >>> u[:, n // 2].gather()                            # doctest: +SKIP
        """
        # (`meshrt.tensor.fastpath.getitem`, compiled, takes this method's place: one element, one owner's piece
        # or a deferred view there, the rest by `_getitem_eager`)
        if type(self) is DistributedTensor and ABOVE.lazy is not None:
            lazy = ABOVE.lazy.getitem(self, key)  # a step-1 slice: a deferred view (meshrt.tensor.lazy)
            if lazy is not None:
                return lazy
        return self._getitem_eager(key)

    def _getitem_eager(self, key) -> "DistributedTensor":
        # ``t[key]`` evaluated now: index arrays and masks, or the index plan's view
        if _key_id(key) is None and ABOVE.advidx is not None:  # index arrays, masks, 0-d tensors as ints
            key = ABOVE.advidx.scalar_key(key)
            if ABOVE.advidx.is_advanced(key):
                return ABOVE.advidx.getitem(self, key)
        plan, local, _ = _index_plan(self, key)
        block = self._interior[local]
        if plan.int_dims:
            block = _drop_ints(block, plan, self.mesh, self._global_shape)
        if plan.flip_dims:
            block = _flip(block, plan, self.mesh)
        if plan.new_dims:
            block = np.expand_dims(block, plan.new_dims)
        return DistributedTensor(block, plan.result_sharding, plan.result_shape)

    def _setitem(self, key, value, deferred_tried=False) -> None:
        """``t[key] = value``: a scalar, a numpy array (the global value, the same on every process:
        each takes its part), or a DistributedTensor of the selection's shape (resharded first).

        Only owned elements are written: halos are not updated (those that
        mirror written elements are stale until the next ``update_halo()``).
        A scalar write through a basic key is remembered per tensor, so a loop
        repeating ``u[0, :] = 1.0`` costs a lookup, not a plan
        (`meshrt._keys.setitem`, this method's compiled front).

        >>> u[0, :] = 1.0                                    # doctest: +SKIP
        """
        # (``deferred_tried``: the compiled front tried the fused write of a deferred value already)
        if ABOVE.fast is not None and type(value) is ABOVE.fast.OwnerValue:  # (a dot held where its row is)
            return value.store(self, key)
        if not deferred_tried and ABOVE.lazy is not None and ABOVE.lazy.setitem(self, key, value):
            return  # a deferred expression written fused (pending expressions evaluated first, meshrt.tensor.lazy)
        if self._sharding.is_partial:
            raise ShardingError(
                f"__setitem__: this tensor is partial ({self._sharding.partial_type} over mesh axes "
                f"{list(self._sharding.partial_axes)}); reshard it to a non-partial sharding first"
            )
        tk = type(key)
        if type(value) is DistributedTensor and not value._global_shape and not value._sharding._partial_axes:
            value = value._interior[()]  # a 0-d value (a read, a dot): its element, the same on every process
        if type(value) in _NP_SCALARS:
            value = value.item()
        if type(value) in _SCALARS and int_key(key) and ABOVE.fast is not None:
            if ABOVE.fast.write_element(self, key, value):  # one element: its owner writes it, no plan
                return
        if _key_id(key) is None and ABOVE.advidx is not None:  # index arrays, masks, 0-d tensors as ints
            key = ABOVE.advidx.scalar_key(key)
            if ABOVE.advidx.is_advanced(key):
                return ABOVE.advidx.setitem(self, key, value)
        plan, local, write = _index_plan(self, key)
        if type(value) in _SCALARS:  # the common boundary-condition write: no checks numpy does not make
            self._interior[write] = value
            if _key_id(key) is not None:
                if self._writes is None:
                    self._writes = ScalarWrites(self._interior)
                self._writes.remember(key, write)
            return
        target = self._interior[local]
        if isinstance(value, DistributedTensor) and value.ndim == 0:  # a reduction's result: its value
            value = np.asarray(value._full_interior())
        if isinstance(value, DistributedTensor):  # (numpy broadcasts the value to the selection)
            fits = value.mesh == self.mesh and _fits(value._global_shape, plan.result_shape)
            vs = value._sharding
            if fits and not vs._partial_axes and not any(vs._split_axes) and value._local.dtype.kind in "biufc":
                # replicated (a row its owner broadcast, ``r = p[-2, :]; p[-1, :] = r``): the global value on
                # every process, each writes its part from it as from a numpy array's, no reshard
                value = value._interior
            elif fits and value._global_shape != plan.result_shape:
                value = np.broadcast_to(value, plan.result_shape)  # (else _to_view_layout names the shapes)
        if isinstance(value, DistributedTensor):
            value = _to_view_layout(value, plan, self.mesh)
            if value is None:
                return
            src = value._interior
        else:
            value = np.asarray(value)
            if value.dtype.hasobject or (value.dtype.kind in "SUV" and self.dtype.kind not in "SUV"):
                raise TypeError(f"value: dtype {value.dtype} cannot be stored in a tensor of dtype {self.dtype}")
            if value.ndim == 0:
                target[...] = value.astype(self.dtype, copy=False)
                return
            try:
                full = np.broadcast_to(value, plan.result_shape)
            except ValueError:
                raise ValueError(f"could not broadcast input array from shape {value.shape} into shape "
                                 f"{plan.result_shape}") from None
            src = full[_to_view_index(plan)][plan.view_sharding.shard_slices(plan.view_shape)]
        if src.dtype == target.dtype and not np.may_share_memory(src, target):
            copy_block(target, src)
        else:
            target[...] = src

    __setitem__ = install_setitem(_setitem)
    __setitem__.__doc__ = _setitem.__doc__

    # -- layout ------------------------------------------------------------------------------------
    def transpose(self, *axes) -> "DistributedTensor":
        """The tensor with its dims permuted, as a view; its sharding is permuted too.

        No data moves; halos, offsets and ``periodic`` follow their dims.

        Parameters
        ----------
        *axes : int or sequence of int
            The permutation, as numpy's (none: reverse the dims).

        Returns
        -------
        DistributedTensor
            A view of this tensor's buffer.

        Raises
        ------
        ValueError
            ``axes`` is not a permutation of the dims.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.zeros((3, 2), Sharding(Mesh((-1,)), [[0]]))
        >>> t.T.shape, t.T.sharding.split_axes
        ((2, 3), ((), (0,)))
        """
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        perm = tuple(range(self.ndim))[::-1] if axes is None or axes == () else _check_perm(axes, self.ndim)
        s = _permute_sharding(self._sharding, self._global_shape, perm)
        periodic = None if self._periodic is None else tuple(self._periodic[p] for p in perm)
        return DistributedTensor(self._local.transpose(perm), s, tuple(self._global_shape[p] for p in perm),
                                 periodic=periodic)

    T = property(lambda self: self.transpose(), doc="The transposed tensor (a view; see `transpose`).")

    def reshape(self, *shape, sharding: Sharding | None = None) -> "DistributedTensor":
        """The tensor with a new global shape (numpy's C order; one ``-1`` allowed).

        A reshape never gathers a split dim.  Where every process's block
        stays as it is (a split dim split into ``(split, whole...)`` dims, or
        merged with whole trailing dims, with shard boundaries on whole rows of
        the new dim; split major dims merged whole) it is a view, with no
        communication.  Otherwise each process sends exactly the row-major runs
        of its block that another process owns in the result, in one
        point-to-point exchange (`meshrt.tensor.reshape_plan`).  Halos are
        dropped.

        Parameters
        ----------
        *shape : int or sequence of int
            The new global shape.
        sharding : Sharding, optional
            The result's sharding (same mesh).  By default a split dim keeps its
            axes on the first (non-1) dim of the new dims it becomes, where no
            data moves that way; other split dims' axes go there too.

        Returns
        -------
        DistributedTensor
            The reshaped tensor.

        Raises
        ------
        ValueError
            The new shape has a different size, or more than one ``-1``.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.from_global(np.arange(6).reshape(3, 2), Sharding(Mesh((-1,)), [[0]]))
        >>> t.reshape(-1, 3).gather()
        array([[0, 1, 2],
               [3, 4, 5]])
        >>> t.reshape(6, sharding=Sharding(t.mesh, [[0]])).sharding.dim_axes(0)
        (0,)
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        new = _reshape_target(self._global_shape, shape)
        if sharding is not None and not isinstance(sharding, Sharding):
            raise TypeError(f"sharding: {sharding!r} is not a Sharding")
        return _reshape(self, new, sharding)

    def cumsum(self, axis=None, dtype=None) -> "DistributedTensor":
        """Cumulative sum along ``axis`` (``None``: of the flattened tensor, as numpy).

        Each process sums its block, then adds the totals of the shards before
        it along the split dim (an exscan: one all_gather of the per-shard
        totals over that dim's mesh axes).  A partial tensor is reduced first.

        Parameters
        ----------
        axis : int, optional
            The dim to accumulate along; None flattens first.
        dtype : numpy.dtype, optional
            The type of the result.

        Returns
        -------
        DistributedTensor
            The running sums.

        Raises
        ------
        numpy.exceptions.AxisError
            ``axis`` is out of range.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), Sharding(Mesh((-1,)), [[0]]))
        >>> t.cumsum(axis=0).gather()
        array([[0., 1.],
               [2., 4.],
               [6., 9.]])
        """
        if axis is None:
            return self.reshape(-1).cumsum(0, dtype)
        return _accumulate(self, np.add, _axes_tuple(axis, self.ndim, "axis")[0], dtype)

    # -- gather ----------------------------------------------------------------------------
    @_check.method("DistributedTensor.reshard")
    def reshard(self, sharding: Sharding, *, out: "DistributedTensor | None" = None) -> "DistributedTensor":
        """This tensor laid out by ``sharding`` (a new tensor on the same mesh).

        The steps are ``meshrt.explain_reshard(self.sharding, sharding,
        self.global_shape)``: dialect collectives, or one exchange that moves each
        missing element once; halos are then filled by one halo update (with this
        tensor's ``periodic``).

        Parameters
        ----------
        sharding : Sharding
            The layout wanted.
        out : DistributedTensor, optional
            An existing tensor of that sharding, shape and dtype to write into (a
            loop that reshards every step then allocates nothing).

        Returns
        -------
        DistributedTensor
            The resharded tensor (``out`` when given).

        Raises
        ------
        ShardingError
            ``sharding`` is on another mesh or cannot shard the shape, or ``out``
            does not match it.

        See Also
        --------
        explain_reshard, plan_reshard

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> mesh = Mesh((-1,), ("x",))
        >>> t = DistributedTensor.from_global(np.arange(6).reshape(3, 2), Sharding(mesh, [["x"]]))
        >>> cols = t.reshard(Sharding(mesh, [[], ["x"]]))
        >>> cols.sharding.split_axes, cols.gather().tolist()
        (((), (0,)), [[0, 1], [2, 3], [4, 5]])
        """
        sharding = _check_sharding(sharding)
        if not same_devices(sharding.mesh, self.mesh):
            raise ShardingError(
                f"sharding: its mesh {sharding.mesh!r} is not this tensor's mesh {self.mesh!r}; "
                "reshard moves data within one mesh (or between sub-axis refinements of it)"
            )
        plan = plan_reshard(self._sharding, sharding, self._global_shape)
        if out is None:
            out = DistributedTensor.empty(self._global_shape, sharding, self.dtype, periodic=self._periodic)
        elif not isinstance(out, DistributedTensor) or (out.sharding, out.global_shape, out.dtype) != (
                sharding, self._global_shape, self.dtype):
            raise ShardingError(
                f"out: expected a DistributedTensor with sharding <{sharding}>, global shape {self._global_shape} "
                f"and dtype {self.dtype}, got {out!r}"
            )
        else:
            _touch(out)  # a write into an existing tensor: pending expressions first
        execute_reshard(plan, self._interior, self.mesh, out=out._interior)
        if sharding.halo_sizes:
            out.update_halo()
        return out

    @_check.method("DistributedTensor.gather")
    def gather(self, root=None):
        """The full global array on every process, or on ``root`` only (None elsewhere).

        A partial tensor is reduced over its partial axes first.

        Parameters
        ----------
        root : int, optional
            The linear device index that gets the array; None (the default): every
            process gets it.

        Returns
        -------
        numpy.ndarray or None
            The global array (None off ``root``).

        Raises
        ------
        ShardingError
            ``root`` is not a device of the mesh.

        Notes
        -----
        One replica of each block sends (the device with coordinate 0 on every
        mesh axis that does not split the tensor), packed with the compiled block
        copy, in one ``Allgatherv`` (``Gatherv`` with a root; ``Allgather`` when
        the blocks are equal).

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.from_global(np.arange(4), Sharding(Mesh((-1,)), [[0]]))
        >>> t.gather(), t.gather(root=0)
        (array([0, 1, 2, 3]), array([0, 1, 2, 3]))
        """
        if root is None:  # a gather seen before that is one Allgather straight into the result
            key = (self._sharding, self._global_shape, self._local.dtype)
            comm = _ALLGATHERS.get(key)
            if comm is not None and self._interior.flags.c_contiguous:
                out = np.empty(key[1], key[2])
                with _mpi.internal("DistributedTensor.gather", "gather of the blocks", self.mesh):
                    comm.Allgather(self._interior, out)
                return out
        mesh, s, shape, dt = self.mesh, self._sharding, self._global_shape, self.dtype
        if root is not None:
            root = _check_root(root, mesh)
        block = self._full_interior()
        layout = _gather_layout(s, shape, dt.itemsize)
        mine = block.size * dt.itemsize if all(mesh.coords[a] == 0 for a in layout.rest) else 0
        if not (root is None or mesh.rank == root):  # a Gatherv sender needs only its own count
            with _mpi.internal("DistributedTensor.gather", "gather of the blocks", mesh):
                mesh.comm.Gatherv(np.ascontiguousarray(block).view(np.uint8).reshape(-1)[:mine], None, root=root)
            return None
        counts, displs, in_place = layout.counts, layout.displs, layout.in_place
        out = np.empty(shape, dt)
        if mine and block.flags.c_contiguous:
            sendbuf = block.reshape(-1).view(np.uint8)
        else:
            sendbuf = np.empty(mine, np.uint8)
            if mine:
                copy_block(sendbuf.view(dt).reshape(block.shape), block)
        recvbuf = out.reshape(-1).view(np.uint8) if in_place else np.empty(int(counts.sum()), np.uint8)
        with _mpi.internal("DistributedTensor.gather", "gather of the blocks", mesh):
            if root is None and layout.equal:
                # Equal blocks (every process sends, same size): MPICH's Allgather is 1.6-2.3x faster
                # than its Allgatherv with equal counts at 1-8 MiB per process (measured, 2 processes).
                mesh.comm.Allgather(sendbuf, recvbuf)
                if in_place and not s.is_partial and dt in _DIRECT_DTYPES:
                    if len(_ALLGATHERS) > 64:
                        _ALLGATHERS.clear()
                    _ALLGATHERS[s, shape, dt] = mesh.comm
            elif root is None:
                mesh.comm.Allgatherv(sendbuf, [recvbuf, (counts, displs)])
            else:
                mesh.comm.Gatherv(sendbuf, [recvbuf, (counts, displs)], root=root)
        if not in_place:
            starts, sizes = layout.starts, layout.sizes
            for d in np.flatnonzero(counts):
                part = recvbuf[displs[d]: displs[d] + counts[d]].view(dt).reshape(sizes[d])
                insert(out, tuple(slice(a, a + n) for a, n in zip(starts[d], sizes[d])), part)
        return out

    def _full_interior(self) -> np.ndarray:
        """The owned block's full values: a partial tensor reduced over its partial axes."""
        s = self._sharding
        if not s.is_partial:
            return self._interior
        return collectives.all_reduce(np.ascontiguousarray(self._interior), self.mesh, s.partial_axes,
                                      reduction=s.partial_type)

    # -- halos -----------------------------------------------------------------------------
    @_check.method("DistributedTensor.update_halo")
    def update_halo(self, wait: bool = True):
        """Fill the halos from the neighbouring shards (edges and corners included).

        Halos at a non-periodic domain boundary are left untouched (see
        `fill_ghosts`).  The exchange plan (neighbours, buffers, persistent
        requests) is built on the first call and kept on the tensor; `free`
        releases it.

        Parameters
        ----------
        wait : bool, optional
            False starts the exchange and returns a handle: work on cells that read
            no halo, then ``handle.wait()``.

        Returns
        -------
        None or HaloHandle
            None when ``wait`` is true.

        Raises
        ------
        ShardingError
            ``wait=False`` on a strided view (a transpose).

        See Also
        --------
        update_halos, HaloExchange

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]], halo_sizes=[1, 1])
        >>> t = DistributedTensor.from_global(np.arange(1.0, 4.0), s, periodic=True)
        >>> t.update_halo()
        >>> t.local
        array([3., 1., 2., 3., 1.])
        """
        if not self._local.flags.c_contiguous:
            return self._update_halo_strided(wait)
        hx = self._halo
        if hx is None:
            hx = self._halo = HaloExchange(self._local, self._sharding, self._global_shape, periodic=self._periodic)
        if wait:
            hx()
            return None
        return hx.start()

    def _update_halo_strided(self, wait):
        # A transposed view's buffer is strided: exchange on a contiguous copy (kept), then copy back.
        if not wait:
            raise ShardingError("update_halo(wait=False): this tensor's local buffer is a strided view (a transpose); "
                                "use wait=True, or copy() the tensor first")
        if not self._sharding.halo_sizes:
            return None
        hx = self._halo
        if hx is None:
            scratch = np.empty(self._local.shape, self.dtype)
            hx = self._halo = HaloExchange(scratch, self._sharding, self._global_shape, periodic=self._periodic)
        copy_block(hx.array, self._local)
        hx()
        copy_block(self._local, hx.array)
        return None

    def free(self) -> None:
        """Release the halo plan (its requests and buffers); the tensor stays usable.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]], halo_sizes=[1, 1])
        >>> t = DistributedTensor.zeros((3,), s, periodic=True)
        >>> t.update_halo()
        >>> t.free()
        """
        hx, self._halo = self._halo, None
        if hx is not None:
            hx.free()

    # -- numpy: elementwise ufuncs -------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        # (a 0-d value's call is `meshrt.tensor.fastpath.array_ufunc`'s, the front installed in this one's place)
        if ABOVE.lazy is not None:  # deferred or fused (meshrt.tensor.lazy); a write evaluates pending expressions
            if method == "__call__" and not kwargs:
                lazy = ABOVE.lazy.ufunc_call(ufunc, inputs, out)
                if lazy is not None:
                    return lazy
            elif out is not None:
                ABOVE.lazy.touch()
        if out is None and not kwargs and method == "__call__":
            result = _fast_ufunc(ufunc, inputs, DistributedTensor)
            if result is not None:
                return result
        name = ufunc.__name__
        handler = _HANDLED_FUNCTIONS.get(ufunc) if method == "__call__" else None
        if handler is not None:  # a registered gufunc, e.g. np.matmul (see `implements`)
            return handler(*inputs, **kwargs) if out is None else handler(*inputs, out=out, **kwargs)
        if method in ("reduce", "accumulate", "outer") and out is None:
            return ABOVE.npreduce.ufunc_method(ufunc, method, inputs, dict(kwargs))
        if method != "__call__" or ufunc.signature is not None:
            what = f"{name}.{method}" if method != "__call__" else name
            raise TypeError(
                f"{what}: only elementwise ufunc calls, their outer (without out=), and reduce/accumulate of the "
                "ufuncs with an MPI reduction, work on a DistributedTensor; use t.sum()/t.max()/... for "
                "reductions, or gather() first"
            )
        outs = out if isinstance(out, tuple) else (out,) if out is not None else ()
        if _mixed_operands(inputs, outs, DistributedTensor):
            return ABOVE.mixed.elementwise_call(ufunc, inputs, outs, kwargs)
        operands = [("input", i, x) for i, x in enumerate(inputs)]
        operands += [("out", i, x) for i, x in enumerate(outs) if x is not None]
        if "where" in kwargs and not isinstance(kwargs["where"], bool):
            operands.append(("where", 0, kwargs["where"]))
        ref = None
        for role, i, x in operands:
            if isinstance(x, DistributedTensor):
                if ref is None:
                    ref = (role, i, x)
                else:
                    _check_same(name, ref, (role, i, x))
            elif isinstance(x, np.ndarray) and x.ndim > 0:
                raise ShardingError(
                    f"{name}: {role} {i} is a numpy array of shape {x.shape} beside a DistributedTensor; that "
                    "is ambiguous (global array or local block?): wrap it with DistributedTensor.from_global "
                    "or operate on t.interior"
                )
            elif role == "out" and x is not None:
                return NotImplemented
            elif role == "input" and not isinstance(x, (numbers.Number, np.generic, np.ndarray)):
                return NotImplemented
        t = ref[2]
        if t._sharding.is_partial:
            _check_partial_ufunc(ufunc, inputs, t._sharding, DistributedTensor)

        args = tuple(x._interior if isinstance(x, DistributedTensor) else x for x in inputs)
        if "where" in kwargs and isinstance(kwargs["where"], DistributedTensor):
            kwargs["where"] = kwargs["where"]._interior
        if outs:
            results = ufunc(*args, out=tuple(o._interior if o is not None else None for o in outs), **kwargs)
            if ufunc.nout == 1:
                results = (results,)
            wrapped = tuple(
                o if o is not None else self._wrap(r, t) for o, r in zip(outs, results)
            )
            return wrapped[0] if ufunc.nout == 1 else wrapped
        prealloc = _result_dtypes(ufunc, args, kwargs)
        if prealloc is not None and "where" not in kwargs:
            news = tuple(DistributedTensor.empty(t._global_shape, t._sharding, dt, periodic=t._periodic) for dt in prealloc)
            ufunc(*args, out=tuple(n._interior for n in news), **kwargs)
            return news[0] if ufunc.nout == 1 else news
        results = ufunc(*args, **kwargs)
        if ufunc.nout == 1:
            return self._wrap(results, t)
        return tuple(self._wrap(r, t) for r in results)

    @staticmethod
    def _wrap(block, like: "DistributedTensor") -> "DistributedTensor":
        block = np.asarray(block)
        new = DistributedTensor.empty(like._global_shape, like._sharding, block.dtype, periodic=like._periodic)
        copy_block(new._interior, block)
        return new

    # -- numpy: functions ----------------------------------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        for t in types:
            if t is not DistributedTensor and not issubclass(t, (DistributedTensor, np.ndarray)):
                return NotImplemented  # another array type may know this mix (NEP 18)
        if func is np.dot and len(args) == 2 and not kwargs and ABOVE.fast is not None:
            r = ABOVE.fast.matmul_1d(*args)  # two vectors: one local dot and one allreduce, no plan
            if r is not None:
                return r
        if ABOVE.lazy is not None:
            lazy = ABOVE.lazy.array_function(func, args, kwargs)
            if lazy is not None:
                return lazy
        handler = _HANDLED_FUNCTIONS.get(func)
        if handler is None:
            raise TypeError(
                f"{_np_name(func)} is not supported on a DistributedTensor; supported: "
                f"{', '.join(sorted({_np_name(f) for f in _HANDLED_FUNCTIONS}))} (or gather() first)"
            )
        return handler(*args, **kwargs)


_install_slots(DistributedTensor)  # (`_fast`'s new tensors: their fields stored straight into the slots)

_NP_SCALARS = (np.float64, np.float32, np.complex128)  # exact as Python scalars


def _touch(t: "DistributedTensor") -> "DistributedTensor":
    """Buffers are handed out (and may be written): pending deferred expressions are evaluated first."""
    if ABOVE.lazy is not None:
        ABOVE.lazy.touch()
    return t


# -- helpers of from_global and reshape ----------------------------------------------------------
def _as_array(array, dtype) -> np.ndarray:
    if isinstance(array, DistributedTensor):
        raise ShardingError("array: is already a DistributedTensor; use reshard (or gather) instead of from_global")
    try:
        arr = np.asarray(array, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise ShardingError(f"array: cannot be read as a numpy array ({e})") from None
    if arr.dtype.hasobject:
        raise ShardingError(f"array: dtype {arr.dtype} holds Python objects; only plain-data dtypes can be sharded")
    return arr


def _reshape(t: "DistributedTensor", new, sharding: "Sharding | None" = None) -> "DistributedTensor":
    old, s = t.global_shape, t.sharding
    if 0 in old:
        empty = DistributedTensor.empty(new, s.replace(split_axes=[], halo_sizes=None, sharded_dims_offsets=None),
                                        t.dtype)
        return empty if sharding is None else empty.reshard(sharding)
    target = _reshape_sharding(s, old, new) if sharding is None else sharding
    if target.mesh != s.mesh:  # a refined mesh (Shardy sub-axes)
        lifted = _lift_to(s, target.mesh)
        if lifted is None:  # reshape on this one, then reshard
            return _reshape(t, new).reshard(target)
        # the same blocks on the finer mesh: a sub-axis split the reshape keeps moves nothing
        t = DistributedTensor(t._local, lifted, old)
        s = lifted
    want = target.replace(halo_sizes=None)
    if (want.partial_axes, want.partial_type) != (s.partial_axes, s.partial_type):
        if s.is_partial and not set(s.partial_axes) & {a for d in range(len(new)) for a in want.dim_axes(d)}:
            want = want.replace(partial_axes=s.partial_axes, partial_type=s.partial_type)
        else:  # the partial axes split the result: sum first
            t = t.reshard(s.replace(partial_axes=(), partial_type="sum", halo_sizes=None))
            s = t.sharding
            want = want.replace(partial_axes=s.partial_axes, partial_type=s.partial_type)
    out = DistributedTensor(_reshape_exchange(t, new, want), want, new)
    return out if out.sharding == target else out.reshard(target)


def _lift_to(s: Sharding, mesh) -> "Sharding | None":
    """``s`` on ``mesh`` where that is a sub-axis refinement of ``s``'s mesh (same processes, the
    same blocks everywhere), else None."""
    from ..reshard import _lift, _refinement, same_devices

    if not same_devices(s.mesh, mesh):
        return None
    ref = _refinement(s.mesh.abstract(), mesh.abstract())
    if ref is None or ref[0].shape != tuple(mesh.shape):
        return None
    return _lift(s, mesh, ref[1])


def _reshape_sharding(s: Sharding, old, new) -> Sharding:
    """The sharding a reshape gives by default: a split dim keeps its axes and shard boundaries
    on the first (non-1) dim of the new run of dims it becomes, where those fall on whole rows of
    it (no data moves); other split dims' axes go there too, evenly."""
    offs = s.dim_offsets(old)
    new_dims = [((), None, (0, 0))] * len(new)
    for gi, gj in _reshape_groups(old, new):
        split = [d for d in gi if s.dim_axes(d)]
        if not split or not gj:
            continue
        d = split[0]
        k = next((e for e in gj if new[e] != 1), gj[0])
        r_old = math.prod(old[e] for e in gi[gi.index(d) + 1:])
        r_new = math.prod(new[e] for e in gj[gj.index(k) + 1:])
        if (len(split) == 1 and all(old[e] == 1 for e in gi[:gi.index(d)])
                and all(o * r_old % r_new == 0 for o in offs[d])):
            new_dims[k] = (s.dim_axes(d), tuple(o * r_old // r_new for o in offs[d]), (0, 0))
        else:
            new_dims[k] = (tuple(a for e in split for a in s.dim_axes(e)), None, (0, 0))
    return _from_dims(s, new_dims, new, keep_halos=False)


def _reshape_exchange(t: "DistributedTensor", new, want: Sharding) -> np.ndarray:
    """This process's block of ``t`` reshaped to ``new`` and laid out by ``want`` (same mesh and
    partial axes, no halos): a view where the block stays as it is, else one exchange of the
    row-major runs that change owner (`meshrt.tensor.reshape_plan`)."""
    from .reshape_plan import is_local, reshape_pieces

    src = _abstract_sharding(t.sharding.replace(halo_sizes=None))
    dst = _abstract_sharding(want)
    old, mesh = t.global_shape, t.mesh
    x = t.interior
    block = want.shard_shape(new)
    if is_local(src, old, dst, tuple(new), mesh.rank):
        return np.ascontiguousarray(x).reshape(block)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(block, t.dtype)
    oflat = out.reshape(-1)
    sends, recvs = reshape_pieces(src, old, dst, tuple(new), mesh.rank)
    rbufs, sbufs, unpack = [], [], []
    for peer, offs, lens in recvs:
        if peer == mesh.rank:
            (_, s_offs, s_lens), = [p for p in sends if p[0] == peer]
            _put_runs(oflat, offs, lens, _take_runs(flat, s_offs, s_lens))
        elif len(offs) == 1:
            rbufs.append((oflat[offs[0]:offs[0] + lens[0]], peer))
        else:
            buf = np.empty(int(lens.sum()), t.dtype)
            rbufs.append((buf, peer))
            unpack.append((offs, lens, buf))
    for peer, offs, lens in sends:
        if peer != mesh.rank:
            sbufs.append((_take_runs(flat, offs, lens), peer))
    _point_to_point(mesh, rbufs, sbufs, "reshape: exchange of the runs that change owner")
    for offs, lens, buf in unpack:
        _put_runs(oflat, offs, lens, buf)
    return out


def _runs_view(flat, offs, lens):
    """Runs ``[o, o + n)`` of ``flat`` as one view (1-d, or 2-d where they are evenly spaced and of
    one length), else None."""
    if len(offs) == 1:
        return flat[offs[0]:offs[0] + lens[0]]
    step = offs[1] - offs[0]
    if (lens != lens[0]).any() or (np.diff(offs) != step).any() or step < lens[0]:
        return None
    return np.lib.stride_tricks.as_strided(flat[offs[0]:], shape=(len(offs), int(lens[0])),
                                           strides=(int(step) * flat.itemsize, flat.itemsize))


def _take_runs(flat, offs, lens) -> np.ndarray:
    """The runs of ``flat``, concatenated (contiguous; a view where there is one run)."""
    from .reshape_plan import run_indices

    v = _runs_view(flat, offs, lens)
    return np.ascontiguousarray(v).reshape(-1) if v is not None else flat[run_indices(offs, lens)]


def _put_runs(flat, offs, lens, values) -> None:
    from .reshape_plan import run_indices

    v = _runs_view(flat, offs, lens)
    if v is not None:
        v[...] = values.reshape(v.shape)
    else:
        flat[run_indices(offs, lens)] = values


_TAG_RESHAPE = 0x5e6


def _point_to_point(mesh, rbufs, sbufs, what):
    from mpi4py import MPI

    from .. import _collfront

    peers = _mpi.Peers(mesh, tuple(sorted({mesh.rank} | {p for _, p in rbufs} | {p for _, p in sbufs})))
    with _mpi.internal("DistributedTensor.reshape", what, peers):
        if not _collfront.exchange(mesh.comm, rbufs, sbufs, _TAG_RESHAPE):
            reqs = [mesh.comm.Irecv([b.view(np.uint8).reshape(-1) if b.size else b, MPI.BYTE], p, _TAG_RESHAPE)
                    for b, p in rbufs]
            reqs += [mesh.comm.Isend([b.view(np.uint8).reshape(-1) if b.size else b, MPI.BYTE], p, _TAG_RESHAPE)
                     for b, p in sbufs]
            MPI.Request.Waitall(reqs)


def _abstract_sharding(s: Sharding) -> Sharding:
    from ..mesh import AbstractMesh

    return s.replace(mesh=s.mesh.abstract()) if type(s.mesh) is not AbstractMesh else s


_IMPLICIT_VALUES = ("", "warn", "error")
_OWN_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
             os.path.dirname(os.path.abspath(np.__file__)) + os.sep)


def _call_site():
    """The first frame outside meshrt and numpy: the program's line that asked for the conversion."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_OWN_DIRS):
        f = f.f_back
    return f if f is not None else sys._getframe(1)


def _implicit_gather(t, what):
    """``t``'s global array for a conversion numpy or Python asked for: one allgather on every process, a
    `PerformanceWarning` once per call site (``MESHRT_IMPLICIT_GATHER=error``: `TypeError` naming it)."""
    mode = os.environ.get("MESHRT_IMPLICIT_GATHER", "").strip().lower()
    if mode not in _IMPLICIT_VALUES:
        raise ValueError(f"MESHRT_IMPLICIT_GATHER={mode!r}: expected 'warn' (the default) or 'error'")
    f = _call_site()
    where = f"{f.f_code.co_filename}:{f.f_lineno}"
    if mode == "error":
        raise TypeError(
            f"{where}: {what} of a DistributedTensor sharded <{t._sharding}> would gather it "
            "(MESHRT_IMPLICIT_GATHER=error); use .gather() for the global array or .interior / .local for "
            "this process's block"
        )
    g = f.f_globals
    warnings.warn_explicit(
        f"{where}: {what} of a split DistributedTensor gathers the global array on every process (one "
        "allgather); call .gather() where the global array is meant, or keep the value a tensor", PerformanceWarning, f.f_code.co_filename, f.f_lineno, module=g.get("__name__"),
        registry=g.setdefault("__warningregistry__", {}), module_globals=g)
    return t.gather()


def _fits(shape, target) -> bool:
    """Whether numpy broadcasts an array of ``shape`` to ``target`` (a value stored into a selection)."""
    if shape == target:
        return True
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False
