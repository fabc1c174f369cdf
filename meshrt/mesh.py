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

    >>> m = AbstractMesh((2, 3), ("x", "y"))
    >>> m.multi_index(4), m.axis_index("y"), m.group_devices(["x"], 4)
    ((1, 1), 1, (1, 4))
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
        return self._shape

    @property
    def axis_names(self) -> tuple | None:
        return self._axis_names

    @property
    def name(self) -> str:
        """The symbol name used when printing MLIR text (``@mesh``); not part of equality."""
        return self._name

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    def abstract(self) -> "AbstractMesh":
        """This mesh's shape and names without processes."""
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
        """The index of a mesh axis given by index or name."""
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
        """Normalize ``mesh_axes`` (None = all axes) to a tuple of distinct indices, order kept."""
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
        """Number of devices in a group over ``mesh_axes``."""
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
        """Row-major linear index of the device at ``coords``."""
        idx = 0
        for x, s in zip(self._check_coords(coords), self._shape):
            idx = idx * s + x
        return idx

    def multi_index(self, linear) -> tuple:
        """Coordinates of the device with linear index ``linear``."""
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
        """Position of a device inside its group over ``mesh_axes`` (first listed = outermost)."""
        c = self._coords_of(coords)
        idx = 0
        for a in self.axes(mesh_axes):
            idx = idx * self._shape[a] + c[a]
        return idx

    def group_devices(self, mesh_axes, device) -> tuple:
        """Linear indices of the devices in ``device``'s group, in group order."""
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
        """Multi-index over ``mesh_axes`` of the device at ``in_group_index`` of a group."""
        sizes = [self._shape[a] for a in self.axes(mesh_axes)]
        out = []
        for s in reversed(sizes):
            out.append(in_group_index % s)
            in_group_index //= s
        return tuple(reversed(out))

    def in_group_from_multi(self, mesh_axes, multi, *, field: str = "root") -> int:
        """In-group linear index from an in-group multi-index (an int is taken as-is)."""
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
        """``(down, up)``: linear indices of the previous/next device along the
        linearized ``split_axes``; ``-1`` where there is none."""
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

    Under ``mpiexec -n 4``, on rank 1:

    >>> mesh = Mesh((2, -1))             # doctest: +SKIP
    >>> mesh.shape, mesh.coords          # doctest: +SKIP
    ((2, 2), (0, 1))
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
        from . import _mpi

        self._world = _mpi.mesh_world(comm)
        _track(self)

    @classmethod
    def parse(cls, text: str, comm=None) -> "Mesh":
        """Read ``mesh.mesh @m(shape = 2x?x4)``, ``shard.grid @g(shape = 2x4)`` or
        ``sdy.mesh @m = <["x"=2, "y"=4]>``."""
        shape, names, name = parse_mesh_text(text)
        return cls(shape, names, comm=comm, name=name)

    @property
    def comm(self):
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
        axes tuple; `free()` releases them.  ``mesh_axes=()`` gives a group of one.
        """
        axes = self.axes(mesh_axes)
        comm = self._groups.get(axes)
        if comm is None:
            if self._comm is None:
                raise MeshError("mesh: this mesh was freed; create a new Mesh to communicate")
            from . import _mpi

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
        """Free the cached group communicators (collective over the mesh)."""
        groups, self._groups = self._groups, {}
        if not groups:
            return
        from . import _mpi

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
