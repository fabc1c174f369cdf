"""Device meshes: `AbstractMesh` (pure index arithmetic) and `Mesh` (bound to MPI).

A mesh is a row-major grid of devices, one device per MPI process.  All index
maps follow MLIR's ``shard`` dialect:

>>> m = AbstractMesh((10, 20, 30))
>>> m.linear_index((1, 2, 3))
663
>>> m.neighbors([1], (1, 2, 3))
(633, 693)
"""

from __future__ import annotations

import atexit
import math
import re
import weakref
from typing import Sequence

from .errors import MeshError

__all__ = ["AbstractMesh", "Mesh", "parse_shape", "dims_create"]



def parse_shape(shape) -> tuple:
    """Normalize a mesh shape; dynamic axes (``-1``, ``None``, ``"?"``) become ``-1``.

    >>> parse_shape("2x?x4")
    (2, -1, 4)
    """
    if isinstance(shape, str):
        text = shape.strip()
        if not text:
            raise MeshError("mesh shape: empty string; expected e.g. '2x4' or '2x?'")
        items = [s.strip() for s in text.split("x")]
    elif isinstance(shape, int):
        items = [shape]
    else:
        try:
            items = list(shape)
        except TypeError:
            raise MeshError(f"mesh shape: {shape!r} is not a sequence of ints") from None
    if not items:
        raise MeshError("mesh shape: () has rank 0; a mesh needs at least one axis")
    out = []
    for i, item in enumerate(items):
        if item is None or item == "?" or item == -1:
            out.append(-1)
            continue
        if isinstance(item, str):
            if not item.isdigit():
                raise MeshError(f"mesh shape: axis {i} is {item!r}, expected an integer or '?'")
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, int) and not hasattr(item, "__index__"):
            raise MeshError(f"mesh shape: axis {i} is {item!r}, expected an integer or -1/None/'?'")
        item = int(item)
        if item <= 0:
            raise MeshError(f"mesh shape: axis {i} has size {item}; sizes must be positive (or -1 for dynamic)")
        out.append(item)
    return tuple(out)


def dims_create(nnodes: int, shape: Sequence[int]) -> tuple:
    """Resolve the dynamic (``-1``) axes of ``shape`` so the product is ``nnodes``.

    Follows ``MPI_Dims_create``: the dynamic axes get sizes as close to each
    other as possible, in non-increasing order.

    >>> dims_create(12, (-1, 2, -1))
    (3, 2, 2)
    """
    fixed = math.prod(s for s in shape if s != -1)
    free = [i for i, s in enumerate(shape) if s == -1]
    if nnodes % fixed != 0 or (not free and fixed != nnodes):
        need = f"a multiple of {fixed}" if free else f"exactly {fixed}"
        raise MeshError(f"mesh shape: {format_shape(shape)} needs {need} processes, but the communicator has {nnodes}")
    if not free:
        return tuple(shape)
    rest = nnodes // fixed
    sizes = [1] * len(free)
    for p in sorted(_prime_factors(rest), reverse=True):
        sizes[sizes.index(min(sizes))] *= p
    sizes.sort(reverse=True)
    out = list(shape)
    for i, s in zip(free, sizes):
        out[i] = s
    return tuple(out)


def _prime_factors(n: int) -> list:
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    return factors


def format_shape(shape: Sequence[int]) -> str:
    return "x".join("?" if s == -1 else str(s) for s in shape)


class AbstractMesh:
    """A static grid of devices with optional axis names and no processes behind it.

    A row-major grid: every index map follows MLIR's ``shard`` dialect.  Pure
    index arithmetic, so any size works (planners take an `AbstractMesh` to show
    what a 65,536-device run would do).  Equal when shape and axis names are
    equal (``name`` does not count); hashable.

    Parameters
    ----------
    shape : sequence of int or str
        The size of each mesh axis, e.g. ``(2, 4)`` or ``"2x4"``.  All static:
        an `AbstractMesh` has no communicator to resolve a dynamic axis.
    axis_names : sequence of str, optional
        One distinct non-empty name per axis (Shardy style); then axes may be
        given by name wherever an axis is expected.
    name : str, optional
        The symbol name used when printing MLIR text (``@mesh``).

    Raises
    ------
    MeshError
        A size that is not a positive int, a dynamic axis, or axis names of the
        wrong count, repeated or empty.

    See Also
    --------
    Mesh

    Examples
    --------
    >>> m = AbstractMesh((2, 3), ("x", "y"))
    >>> m.multi_index(4), m.axis_index("y"), m.group_devices(["x"], 4)
    ((1, 1), 1, (1, 4))
    >>> print(m)
    sdy.mesh @mesh = <["x"=2, "y"=3]>
    >>> m.size, m.ndim
    (6, 2)
    """

    __slots__ = ("_shape", "_axis_names", "_name", "__weakref__")

    def __init__(self, shape, axis_names: Sequence[str] | None = None, *, name: str = "mesh"):
        shape = parse_shape(shape)
        if -1 in shape and type(self) is AbstractMesh:
            raise MeshError(
                f"mesh shape: {format_shape(shape)} has a dynamic axis; an AbstractMesh "
                "has no communicator to resolve it, give a static shape"
            )
        self._shape = shape
        self._axis_names = _check_axis_names(axis_names, len(shape))
        self._name = str(name)

    # -- value semantics ---------------------------------------------------
    @property
    def shape(self) -> tuple:
        """The size of each mesh axis."""
        return self._shape

    @property
    def axis_names(self) -> tuple | None:
        """The axis names, or None for an unnamed mesh."""
        return self._axis_names

    @property
    def name(self) -> str:
        """The symbol name used when printing MLIR text (``@mesh``); not part of equality."""
        return self._name

    @property
    def ndim(self) -> int:
        """The number of mesh axes."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of devices (the product of the axis sizes)."""
        return math.prod(self._shape)

    def abstract(self) -> "AbstractMesh":
        """This mesh's shape and names without processes.

        Returns
        -------
        AbstractMesh
            A mesh equal in shape, axis names and name, with no communicator.

        Examples
        --------
        >>> AbstractMesh((2, 2)).abstract()
        AbstractMesh((2, 2))
        """
        return AbstractMesh(self._shape, self._axis_names, name=self._name)

    def _key(self):
        return (self._shape, self._axis_names)

    def __eq__(self, other):
        if not isinstance(other, AbstractMesh):
            return NotImplemented
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        names = f", axis_names={self._axis_names!r}" if self._axis_names else ""
        return f"{type(self).__name__}({self._shape!r}{names})"

    def __str__(self):
        if self._axis_names:
            axes = ", ".join(f'"{n}"={s}' for n, s in zip(self._axis_names, self._shape))
            return f"sdy.mesh @{self._name} = <[{axes}]>"
        return f"shard.grid @{self._name}(shape = {format_shape(self._shape)})"

    # -- axes ----------------------------------------------------------------
    def axis_index(self, axis) -> int:
        """The index of a mesh axis given by index or name.

        Parameters
        ----------
        axis : int or str
            An axis index or one of ``axis_names``.

        Returns
        -------
        int
            The axis index.

        Raises
        ------
        MeshError
            An unknown name or an index out of range.

        Examples
        --------
        >>> AbstractMesh((2, 3), ("x", "y")).axis_index("y")
        1
        """
        if isinstance(axis, str):
            if self._axis_names and axis in self._axis_names:
                return self._axis_names.index(axis)
            known = f"the mesh has {list(self._axis_names)}" if self._axis_names else "the mesh has no axis names"
            raise MeshError(f"mesh axis: unknown name {axis!r}; {known}")
        if isinstance(axis, bool) or not hasattr(axis, "__index__"):
            raise MeshError(f"mesh axis: {axis!r} is neither an int nor an axis name")
        i = int(axis)
        if not 0 <= i < self.ndim:
            raise MeshError(f"mesh axis: {i} is out of range for a mesh of rank {self.ndim} (shape {self._shape})")
        return i

    def axes(self, mesh_axes, *, field: str = "mesh_axes") -> tuple:
        """Normalize ``mesh_axes`` to a tuple of distinct axis indices, order kept.

        Parameters
        ----------
        mesh_axes : int, str or sequence of int or str, or None
            The axes; None means all axes.
        field : str, optional
            The argument name used in error messages.

        Returns
        -------
        tuple of int
            The axis indices.

        Raises
        ------
        MeshError
            An unknown axis, or one given twice.

        Examples
        --------
        >>> m = AbstractMesh((2, 3, 4), ("x", "y", "z"))
        >>> m.axes(["z", 0]), m.axes(None), m.axes("y")
        ((2, 0), (0, 1, 2), (1,))
        """
        if mesh_axes is None:
            return tuple(range(self.ndim))
        if isinstance(mesh_axes, (int, str)) and not isinstance(mesh_axes, bool):
            mesh_axes = (mesh_axes,)
        try:
            items = list(mesh_axes)
        except TypeError:
            raise MeshError(f"{field}: {mesh_axes!r} is not a sequence of mesh axes") from None
        out = []
        for a in items:
            try:
                i = self.axis_index(a)
            except MeshError as e:
                raise MeshError(f"{field}: {e}") from None
            if i in out:
                raise MeshError(f"{field}: mesh axis {a!r} appears twice in {tuple(items)!r}")
            out.append(i)
        return tuple(out)

    def axes_size(self, mesh_axes) -> int:
        """Number of devices in a group over ``mesh_axes``.

        Parameters
        ----------
        mesh_axes : int, str or sequence, or None
            The group's mesh axes (None = all).

        Returns
        -------
        int
            The product of their sizes.

        Raises
        ------
        MeshError
            An unknown or repeated axis.

        Examples
        --------
        >>> AbstractMesh((2, 3, 4)).axes_size([0, 2])
        8
        """
        return math.prod(self._shape[a] for a in self.axes(mesh_axes))

    # -- index maps ----------------------------------------------------------
    def _check_coords(self, coords) -> tuple:
        try:
            c = tuple(int(x) for x in coords)
        except TypeError:
            raise MeshError(f"coords: {coords!r} is not a sequence of ints") from None
        if len(c) != self.ndim or any(not 0 <= x < s for x, s in zip(c, self._shape)):
            raise MeshError(f"coords: {c} is not a device of a mesh of shape {self._shape}")
        return c

    def _check_device(self, device) -> int:
        if isinstance(device, bool) or not hasattr(device, "__index__"):
            raise MeshError(f"device: {device!r} is not a linear device index")
        d = int(device)
        if not 0 <= d < self.size:
            raise MeshError(f"device: {d} is out of range for a mesh of {self.size} devices")
        return d

    def linear_index(self, coords) -> int:
        """Row-major linear index of the device at ``coords``.

        Parameters
        ----------
        coords : sequence of int
            One coordinate per mesh axis.

        Returns
        -------
        int
            The device's linear index.

        Raises
        ------
        MeshError
            ``coords`` is not a device of this mesh.

        Examples
        --------
        >>> AbstractMesh((10, 20, 30)).linear_index((1, 2, 3))
        663
        """
        idx = 0
        for x, s in zip(self._check_coords(coords), self._shape):
            idx = idx * s + x
        return idx

    def multi_index(self, linear) -> tuple:
        """Coordinates of the device with linear index ``linear``.

        Parameters
        ----------
        linear : int
            A linear device index.

        Returns
        -------
        tuple of int
            One coordinate per mesh axis.

        Raises
        ------
        MeshError
            ``linear`` is out of range.

        Examples
        --------
        >>> AbstractMesh((10, 20, 30)).multi_index(663)
        (1, 2, 3)
        """
        linear = self._check_device(linear)
        out = []
        for s in reversed(self._shape):
            out.append(linear % s)
            linear //= s
        return tuple(reversed(out))

    def _coords_of(self, device) -> tuple:
        """Accept a linear index or a multi-index; return coordinates."""
        if device is None:
            raise MeshError("device: no device given (an AbstractMesh has no 'this process')")
        if hasattr(device, "__index__") and not isinstance(device, bool):
            return self.multi_index(device)
        return self._check_coords(device)

    def in_group_index(self, coords, mesh_axes) -> int:
        """Position of a device inside its group over ``mesh_axes`` (first listed = outermost).

        Parameters
        ----------
        coords : int or sequence of int
            The device, as a linear index or coordinates (on a `Mesh`, None means
            this process's device).
        mesh_axes : int, str or sequence, or None
            The group's mesh axes (None = all).

        Returns
        -------
        int
            The in-group linear index.

        Raises
        ------
        MeshError
            A bad device or axis.

        Examples
        --------
        >>> AbstractMesh((2, 3)).in_group_index((1, 2), [1, 0])
        5
        """
        c = self._coords_of(coords)
        idx = 0
        for a in self.axes(mesh_axes):
            idx = idx * self._shape[a] + c[a]
        return idx

    def group_devices(self, mesh_axes, device) -> tuple:
        """Linear indices of the devices in ``device``'s group, in group order.

        Parameters
        ----------
        mesh_axes : int, str or sequence, or None
            The group's mesh axes (None = all).
        device : int or sequence of int
            A device of the group, as a linear index or coordinates (on a `Mesh`,
            default this process's device).

        Returns
        -------
        tuple of int
            The group's devices.

        Raises
        ------
        MeshError
            A bad device or axis.

        Examples
        --------
        >>> AbstractMesh((2, 3)).group_devices([1], 4)
        (3, 4, 5)
        """
        c = list(self._coords_of(device))
        axes = self.axes(mesh_axes)
        sizes = [self._shape[a] for a in axes]
        out = []
        for k in range(math.prod(sizes)):
            rem = k
            for a, s in zip(reversed(axes), reversed(sizes)):
                c[a] = rem % s
                rem //= s
            out.append(self.linear_index(c))
        return tuple(out)

    def group_coords(self, mesh_axes, in_group_index: int) -> tuple:
        """Multi-index over ``mesh_axes`` of the device at ``in_group_index`` of a group.

        Parameters
        ----------
        mesh_axes : int, str or sequence, or None
            The group's mesh axes (None = all).
        in_group_index : int
            A position in the group.

        Returns
        -------
        tuple of int
            One coordinate per axis of ``mesh_axes``.

        Raises
        ------
        MeshError
            An unknown or repeated axis.

        Examples
        --------
        >>> AbstractMesh((2, 3)).group_coords([0, 1], 4)
        (1, 1)
        """
        sizes = [self._shape[a] for a in self.axes(mesh_axes)]
        out = []
        for s in reversed(sizes):
            out.append(in_group_index % s)
            in_group_index //= s
        return tuple(reversed(out))

    def in_group_from_multi(self, mesh_axes, multi, *, field: str = "root") -> int:
        """In-group linear index from an in-group multi-index (an int is taken as-is).

        Parameters
        ----------
        mesh_axes : int, str or sequence, or None
            The group's mesh axes (None = all).
        multi : int or sequence of int
            An in-group multi-index, or an in-group linear index.
        field : str, optional
            The argument name used in error messages.

        Returns
        -------
        int
            The in-group linear index.

        Raises
        ------
        MeshError
            ``multi`` lies outside the group.

        Examples
        --------
        >>> AbstractMesh((2, 3)).in_group_from_multi([0, 1], (1, 1))
        4
        """
        axes = self.axes(mesh_axes)
        sizes = [self._shape[a] for a in axes]
        n = math.prod(sizes)
        if hasattr(multi, "__index__") and not isinstance(multi, bool):
            k = int(multi)
            if not 0 <= k < n:
                raise MeshError(f"{field}: {k} is outside the device group of size {n} over mesh axes {axes}")
            return k
        try:
            m = tuple(int(x) for x in multi)
        except TypeError:
            raise MeshError(f"{field}: {multi!r} is not an in-group index") from None
        if len(m) != len(sizes) or any(not 0 <= x < s for x, s in zip(m, sizes)):
            raise MeshError(
                f"{field}: {m} is outside the device group over mesh axes {axes} (shape {tuple(sizes)})"
            )
        k = 0
        for x, s in zip(m, sizes):
            k = k * s + x
        return k

    def neighbors(self, split_axes, coords=None) -> tuple:
        """``(down, up)``: linear indices of the previous/next device along the linearized ``split_axes``.

        ``-1`` where there is none.

        Parameters
        ----------
        split_axes : int, str or sequence
            The mesh axes, first listed outermost.
        coords : int or sequence of int, optional
            The device; required on an `AbstractMesh`, default this process's on a
            `Mesh`.

        Returns
        -------
        tuple of int
            ``(down, up)``.

        Raises
        ------
        MeshError
            A bad device or axis.

        Examples
        --------
        >>> AbstractMesh((10, 20, 30)).neighbors([1], (1, 2, 3))
        (633, 693)
        """
        c = self._coords_of(self._default_coords(coords))
        group = self.group_devices(split_axes, c)
        k = self.in_group_index(c, split_axes)
        down = group[k - 1] if k > 0 else -1
        up = group[k + 1] if k + 1 < len(group) else -1
        return down, up

    def _default_coords(self, coords):
        return coords


def _check_axis_names(axis_names, ndim):
    if axis_names is None:
        return None
    if isinstance(axis_names, str):
        axis_names = (axis_names,)
    names = tuple(axis_names)
    if len(names) != ndim:
        raise MeshError(f"axis_names: {names!r} has {len(names)} names for a mesh of rank {ndim}")
    for n in names:
        if not isinstance(n, str) or not n:
            raise MeshError(f"axis_names: {n!r} is not a non-empty string")
    if len(set(names)) != len(names):
        raise MeshError(f"axis_names: {names!r} repeats a name")
    return names


_LIVE_MESHES: "weakref.WeakSet[Mesh]" = weakref.WeakSet()


def _free_all_groups():
    for mesh in list(_LIVE_MESHES):
        mesh.free()


def _track(mesh: "Mesh") -> None:
    # Registered on the first Mesh, after mpi4py.MPI is imported: atexit runs hooks
    # last-in first-out, so the groups are freed before mpi4py finalizes MPI.
    if not _LIVE_MESHES:
        atexit.unregister(_free_all_groups)
        atexit.register(_free_all_groups)
    _LIVE_MESHES.add(mesh)


class Mesh(AbstractMesh):
    """An `AbstractMesh` bound to an MPI communicator, one device per process.

    Device ``k`` is the process of rank ``k`` in ``comm``.  Creating one makes
    local MPI calls only; the group communicators it creates on first use
    (`group`) are collective, and are freed by `free`, by leaving a ``with``
    block, or at exit.

    Parameters
    ----------
    shape : sequence of int or str
        The size of each mesh axis; dynamic axes (``-1``, ``None``, ``"?"``) are
        resolved as ``MPI_Dims_create`` does so that the product is the
        communicator's size.
    axis_names : sequence of str, optional
        One distinct non-empty name per axis.
    comm : mpi4py.MPI.Comm, optional
        The communicator; default ``MPI.COMM_WORLD``.
    name : str, optional
        The symbol name used when printing MLIR text.

    Raises
    ------
    MeshError
        A bad shape or names, or a shape whose size does not fit the
        communicator's.

    See Also
    --------
    AbstractMesh

    Examples
    --------
    Under ``mpiexec -n 4``, on rank 1, ``Mesh((2, -1))`` has shape ``(2, 2)``
    and coordinates ``(0, 1)``.  At one process:

    >>> mesh = Mesh((-1,), ("x",))
    >>> mesh.shape, mesh.coords, mesh.rank
    ((1,), (0,), 0)
    >>> with Mesh((1, -1)) as m:
    ...     m.group([1]).Get_size()
    1
    """

    __slots__ = ("_comm", "_groups", "_rank", "_coords", "_world")

    def __init__(self, shape, axis_names: Sequence[str] | None = None, *, comm=None, name: str = "mesh"):
        if comm is None:
            from mpi4py import MPI

            comm = MPI.COMM_WORLD
        super().__init__(shape, axis_names, name=name)
        self._shape = dims_create(comm.Get_size(), self._shape)
        self._comm = comm
        self._groups = {}
        self._rank = comm.Get_rank()
        self._coords = self.multi_index(self._rank)
        from .runtime import mpi as _mpi

        self._world = _mpi.mesh_world(comm)
        _track(self)
        from .runtime import warmup

        warmup.start()  # this process runs tensor code: Numba's start-up on a thread, beside the set-up

    @classmethod
    def parse(cls, text: str, comm=None) -> "Mesh":
        """Read a mesh declaration in MLIR or Shardy text.

        ``mesh.mesh @m(shape = 2x?x4)``, ``shard.grid @g(shape = 2x4)`` or
        ``sdy.mesh @m = <["x"=2, "y"=4]>``; the symbol becomes the mesh's ``name``.

        Parameters
        ----------
        text : str
            The declaration.
        comm : mpi4py.MPI.Comm, optional
            The communicator; default ``MPI.COMM_WORLD``.

        Returns
        -------
        Mesh
            The mesh.

        Raises
        ------
        MeshError
            Text that is not a mesh declaration, or a shape that does not fit the
            communicator.

        Examples
        --------
        >>> print(Mesh.parse("shard.grid @g(shape = ?)"))
        shard.grid @g(shape = 1)
        >>> Mesh.parse('sdy.mesh @m = <["x"=1]>').axis_names
        ('x',)
        """
        shape, names, name = parse_mesh_text(text)
        return cls(shape, names, comm=comm, name=name)

    @property
    def comm(self):
        """The communicator the mesh is bound to."""
        return self._comm

    @property
    def world(self):
        """The ``MPI.COMM_WORLD`` rank of each device, by linear index (None if ``comm`` is
        not an mpi4py communicator)."""
        return self._world

    @property
    def rank(self) -> int:
        """This process's linear device index."""
        return self._rank

    @property
    def coords(self) -> tuple:
        """This process's multi-index."""
        return self._coords

    def __eq__(self, other):
        if not isinstance(other, Mesh):
            return NotImplemented
        return (self._shape, self._axis_names) == (other._shape, other._axis_names) and (
            self._comm is other._comm or self._comm == other._comm
        )

    def __hash__(self):
        return hash((self._shape, self._axis_names))

    def _default_coords(self, coords):
        return self._coords if coords is None else coords

    def in_group_index(self, coords=None, mesh_axes=None) -> int:
        return super().in_group_index(self._default_coords(coords), mesh_axes)

    def group_devices(self, mesh_axes, device=None) -> tuple:
        return super().group_devices(mesh_axes, self._default_coords(device))

    def group(self, mesh_axes=None):
        """The communicator of this process's device group over ``mesh_axes``.

        Its rank is the in-group index (first listed axis outermost).  Created
        collectively over the mesh's communicator on first use, then cached per
        axes tuple; `free` releases them.

        Parameters
        ----------
        mesh_axes : int, str or sequence, or None, optional
            The group's mesh axes (None = all, ``()`` = a group of one).

        Returns
        -------
        mpi4py.MPI.Comm
            The group's communicator.

        Raises
        ------
        MeshError
            An unknown or repeated axis, or a freed mesh.

        Examples
        --------
        >>> mesh = Mesh((1, -1), ("x", "y"))
        >>> mesh.group(["y"]).Get_size(), mesh.group(()).Get_rank()
        (1, 0)
        """
        if type(mesh_axes) is tuple:  # (the groups are keyed by their axes as `axes` gives them: a tuple of ints)
            comm = self._groups.get(mesh_axes)
            if comm is not None:
                return comm
        axes = self.axes(mesh_axes)
        comm = self._groups.get(axes)
        if comm is None:
            if self._comm is None:
                raise MeshError("mesh: this mesh was freed; create a new Mesh to communicate")
            from .runtime import mpi as _mpi

            with _mpi.internal("Mesh.group", "communicator creation", self):
                if axes == tuple(range(self.ndim)) and list(axes) == sorted(axes):
                    comm = self._comm.Dup()
                else:
                    others = [a for a in range(self.ndim) if a not in axes]
                    color = 0
                    for a in others:
                        color = color * self._shape[a] + self._coords[a]
                    comm = self._comm.Split(color, self.in_group_index(self._coords, axes))
            if self._world is not None:
                _mpi.note_world(comm, (self._world[d] for d in self.group_devices(axes)))
            self._groups[axes] = comm
        return comm

    def free(self) -> None:
        """Free the cached group communicators (collective over the mesh).

        The mesh stays usable: a later `group` creates them again.

        Examples
        --------
        >>> mesh = Mesh((-1,))
        >>> _ = mesh.group()
        >>> mesh.free()
        """
        groups, self._groups = self._groups, {}
        if not groups:
            return
        from .runtime import mpi as _mpi

        for comm in groups.values():
            _mpi.forget_world(comm)
            try:
                with _mpi.internal("Mesh.free", "communicator free", self):
                    comm.Free()
            except Exception:  # MPI already finalized: nothing left to free
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()


_MLIR_MESH = re.compile(
    r"^\s*(?:%[\w.$-]+\s*=\s*)?(?P<dialect>mesh\.mesh|shard\.grid)\s+@(?P<name>[\w.$-]+)\s*"
    r"\(\s*shape\s*=\s*(?P<shape>[^)]*)\)\s*$"
)
_SDY_MESH = re.compile(r"^\s*sdy\.mesh\s+@(?P<name>[\w.$-]+)\s*=\s*<\s*\[(?P<axes>[^\]]*)\]\s*(?:,[^>]*)?>\s*$")
_SDY_AXIS = re.compile(r'^\s*"(?P<n>[^"]+)"\s*=\s*(?P<s>\d+)\s*$')


def parse_mesh_text(text: str) -> tuple:
    """``(shape, axis_names, name)`` from an MLIR or Shardy mesh declaration."""
    if not isinstance(text, str):
        raise MeshError(f"mesh text: {text!r} is not a string")
    m = _MLIR_MESH.match(text)
    if m:
        shape_text = m.group("shape").strip()
        try:
            shape = parse_shape(shape_text)
        except MeshError as e:
            raise MeshError(f"mesh text: cannot read shape {shape_text!r} in {text.strip()!r}: {e}") from None
        return shape, None, m.group("name")
    m = _SDY_MESH.match(text)
    if m:
        shape, names = [], []
        body = m.group("axes").strip()
        for part in body.split(",") if body else []:
            a = _SDY_AXIS.match(part)
            if not a:
                raise MeshError(f'mesh text: cannot read axis {part.strip()!r} in {text.strip()!r}; expected "name"=size')
            names.append(a.group("n"))
            shape.append(int(a.group("s")))
        if not shape:
            raise MeshError(f"mesh text: {text.strip()!r} declares no axes")
        return parse_shape(shape), tuple(names), m.group("name")
    raise MeshError(
        f"mesh text: cannot parse {text.strip()!r}; expected 'mesh.mesh @m(shape = 2x4)', "
        "'shard.grid @g(shape = 2x?)' or 'sdy.mesh @m = <[\"x\"=2, \"y\"=4]>'"
    )
