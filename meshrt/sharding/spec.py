"""Shardings: how a tensor's dims are split over mesh axes, with partials, halos and offsets.

All shard-size arithmetic lives here; every other module asks a `Sharding`.

>>> from meshrt.mesh import AbstractMesh
>>> s = Sharding(AbstractMesh((2, 2)), [[0], [1]], sharded_dims_offsets=[0, 24, 32, 0, 20, 32])
>>> s.shard_shape((32, 32, 32), 0), s.shard_shape((32, 32, 32), 3)
((24, 20, 32), (8, 12, 32))
>>> print(s)
shard.sharding @mesh split_axes = [[0], [1]] sharded_dims_offsets = [0, 24, 32, 0, 20, 32]
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Sequence

from ..errors import MeshError, ShardingError
from ..mesh import AbstractMesh, Mesh
from ..reduction import REDUCTION_KINDS, ReductionKind
from ..runtime import check as _check
from .text import parse_sharding, sdy_text, sub_axes, visualize as _visualize

__all__ = ["Sharding", "REDUCTION_KINDS", "split_sizes", "split_offsets"]


def split_sizes(dim_size: int, n: int) -> tuple:
    """Sizes of the ``n`` pieces of a dim of ``dim_size`` under MLIR's uneven rule.

    The extra elements go to the trailing pieces:

    >>> split_sizes(10, 4)
    (2, 2, 3, 3)
    """
    base, extra = divmod(dim_size, n)
    return (base,) * (n - extra) + (base + 1,) * extra


def split_offsets(dim_size: int, n: int) -> tuple:
    """Start of every piece plus the end of the last: ``split_offsets(10, 4) == (0, 2, 4, 7, 10)``."""
    return tuple(itertools.accumulate(split_sizes(dim_size, n), initial=0))


def _int(value, field: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ShardingError(f"{field}: {value!r} is not an integer")
    return int(value)


class Sharding:
    """An immutable, hashable description of how a tensor is laid out on a mesh.

    The shard dialect's ``shard.sharding``.  ``split_axes[i]`` lists the mesh
    axes that tensor dim ``i`` is split along, major to minor; trailing dims not
    listed are whole.  Sizes that do not divide follow MLIR's uneven rule (the
    extra elements go to the trailing shards) unless ``sharded_dims_offsets``
    gives the shards explicitly.  Equal shardings compare equal and hash alike.

    Parameters
    ----------
    mesh : AbstractMesh or Mesh
        The mesh the tensor is laid out on.
    split_axes : sequence of sequence of int or str, optional
        Per tensor dim, the mesh axes (indices or names) splitting it; ``[]``
        (the default) is fully replicated.  A mesh axis splits at most one dim.
    partial_axes : sequence of int or str, optional
        Mesh axes over which the tensor holds partial values: the true value is
        their reduction by ``partial_type``.  Disjoint from the split axes.
    partial_type : str or ReductionKind, optional
        The reduction of the partial values; default ``"sum"`` (``generic`` is
        not allowed, as in MLIR).
    halo_sizes : sequence of int, optional
        Two widths (low, high) per sharded dim, flattened.
    sharded_dims_offsets : sequence of int, optional
        Per sharded dim, the start of every shard plus the end of the last,
        flattened (uneven shards of any sizes).

    Raises
    ------
    ShardingError
        ``mesh`` is not a mesh, an unknown or repeated mesh axis, partial axes
        that also split, an unknown or generic ``partial_type``, or halo sizes or
        offsets of the wrong count or order.

    See Also
    --------
    AbstractMesh, DistributedTensor, plan_reshard

    Examples
    --------
    >>> mesh = AbstractMesh((2, 3), ("x", "y"))
    >>> s = Sharding(mesh, [["y"], [], ["x"]], halo_sizes=[1, 1, 0, 2])
    >>> s.split_axes, s.local_shape((9, 4, 6), device=4)
    (((1,), (), (0,)), (5, 4, 5))
    >>> print(s)
    shard.sharding @mesh split_axes = [[1], [], [0]] halo_sizes = [1, 1, 0, 2]
    >>> print(Sharding(mesh, [], partial_axes=["x"], partial_type="max"))
    shard.sharding @mesh split_axes = [[]] partial = max[0]
    """

    __slots__ = ("_mesh", "_split_axes", "_partial_axes", "_partial_type", "_halo_sizes", "_offsets", "_hash", "_value",
                 "_sharded", "_widths")

    def __init__(
        self,
        mesh: AbstractMesh,
        split_axes: Sequence = (),
        *,
        partial_axes: Sequence = (),
        partial_type: str = "sum",
        halo_sizes: Sequence[int] | None = None,
        sharded_dims_offsets: Sequence[int] | None = None,
    ):
        if not isinstance(mesh, AbstractMesh):
            raise ShardingError(f"mesh: {mesh!r} is not a Mesh or AbstractMesh")
        self._mesh = mesh
        self._split_axes = _normalize_split_axes(mesh, split_axes)
        self._sharded = tuple([d for d, axes in enumerate(self._split_axes) if axes])
        used = {a for axes in self._split_axes for a in axes}

        try:
            partial = mesh.axes(partial_axes, field="partial_axes")
        except MeshError as e:
            raise ShardingError(str(e)) from None
        for a in partial:
            if a in used:
                raise ShardingError(
                    f"partial_axes: mesh axis {_axis_label(mesh, a)} is also used to split the tensor "
                    f"(split_axes {_list(self._split_axes)})"
                )
        self._partial_axes = tuple(sorted(partial))
        kind = getattr(partial_type, "value", partial_type)
        if kind not in REDUCTION_KINDS:
            raise ShardingError(f"partial_type: unknown reduction kind {partial_type!r}; expected one of {REDUCTION_KINDS[:-1]}")
        if kind == "generic":
            raise ShardingError("partial_type: 'generic' is not allowed for a sharding's partial type (as in MLIR)")
        self._partial_type = ReductionKind(kind if self._partial_axes else "sum")

        nsharded = len(self.sharded_dims)
        self._halo_sizes = _normalize_halos(halo_sizes, nsharded)
        hs = self._halo_sizes
        self._widths = {d: (hs[2 * k], hs[2 * k + 1]) for k, d in enumerate(self._sharded)} if hs else {}
        self._offsets = _normalize_offsets(sharded_dims_offsets, [self.dim_split_size(d) for d in self.sharded_dims])
        self._value = self._key()  # (kept: equal but distinct shardings are compared by it in every cache lookup)
        self._hash = hash(self._value)

    # -- value semantics -----------------------------------------------------
    mesh = property(lambda self: self._mesh, doc="The mesh (`Mesh` or `AbstractMesh`) whose axes it names.")
    split_axes = property(lambda self: self._split_axes,
                          doc="Per tensor dim, the mesh axes splitting it (major to minor); later dims are whole.")
    partial_axes = property(lambda self: self._partial_axes,
                            doc="The mesh axes over which the values are partial (empty if none).")
    partial_type = property(lambda self: self._partial_type,
                            doc="The `ReductionKind` that combines the partial values over `partial_axes`.")
    halo_sizes = property(lambda self: self._halo_sizes,
                          doc="Two widths (low, high) per sharded dim, flattened; () for none.")
    sharded_dims_offsets = property(lambda self: self._offsets,
                                    doc="Per sharded dim, every shard's start plus the end, flattened; () if even.")

    def _key(self):
        return (self._mesh, self._split_axes, self._partial_axes, self._partial_type, self._halo_sizes, self._offsets)

    def __eq__(self, other):
        if not isinstance(other, Sharding):
            return NotImplemented
        return self is other or self._hash == other._hash and self._value == other._value

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"Sharding({self})"

    def replace(self, **changes) -> "Sharding":
        """A copy with some fields changed.

        Parameters
        ----------
        **changes
            New values for ``mesh``, ``split_axes``, ``partial_axes``,
            ``partial_type``, ``halo_sizes`` or ``sharded_dims_offsets``.

        Returns
        -------
        Sharding
            The new sharding (validated as by the constructor).

        Raises
        ------
        ShardingError
            An unknown field, or a value the constructor refuses.

        Examples
        --------
        >>> s = Sharding(AbstractMesh((2,)), [[0]])
        >>> print(s.replace(halo_sizes=[1, 1]))
        shard.sharding @mesh split_axes = [[0]] halo_sizes = [1, 1]
        """
        fields = dict(
            split_axes=self._split_axes, partial_axes=self._partial_axes, partial_type=self._partial_type,
            halo_sizes=self._halo_sizes, sharded_dims_offsets=self._offsets,
        )
        mesh = changes.pop("mesh", self._mesh)
        unknown = set(changes) - set(fields)
        if unknown:
            raise ShardingError(f"replace: unknown field(s) {sorted(unknown)}")
        fields.update(changes)
        split = fields.pop("split_axes")
        return Sharding(mesh, split, **fields)

    # -- structure -----------------------------------------------------------
    @property
    def sharded_dims(self) -> tuple:
        """Tensor dims split along at least one mesh axis, in order."""
        return self._sharded

    @property
    def is_partial(self) -> bool:
        """Whether the tensor holds partial values over some mesh axes."""
        return bool(self._partial_axes)

    @property
    def is_replicated(self) -> bool:
        """No dim split and no partial axes, so every device holds the whole tensor."""
        return not self._split_axes and not self._partial_axes

    def dim_axes(self, dim: int) -> tuple:
        """The mesh axes splitting tensor dim ``dim``, major to minor.

        Parameters
        ----------
        dim : int
            A tensor dim (dims past ``split_axes`` are whole).

        Returns
        -------
        tuple of int
            The mesh axis indices; ``()`` for a whole dim.

        Examples
        --------
        >>> s = Sharding(AbstractMesh((2, 3), ("x", "y")), [["y", "x"]])
        >>> s.dim_axes(0), s.dim_axes(1)
        ((1, 0), ())
        """
        return self._split_axes[dim] if dim < len(self._split_axes) else ()

    def dim_split_size(self, dim: int) -> int:
        """Number of shards of tensor dim ``dim``.

        Parameters
        ----------
        dim : int
            A tensor dim.

        Returns
        -------
        int
            The product of the sizes of the mesh axes splitting it (1 if whole).

        Examples
        --------
        >>> Sharding(AbstractMesh((2, 3)), [[0, 1]]).dim_split_size(0)
        6
        """
        return math.prod(self._mesh.shape[a] for a in self.dim_axes(dim))

    def halo_widths(self, dim: int) -> tuple:
        """``(lo, hi)`` halo widths of tensor dim ``dim``.

        Parameters
        ----------
        dim : int
            A tensor dim.

        Returns
        -------
        tuple of int
            ``(lo, hi)``; zeros where the dim is not sharded or has no halos.

        Examples
        --------
        >>> s = Sharding(AbstractMesh((2, 3)), [[1], [], [0]], halo_sizes=[1, 1, 0, 2])
        >>> s.halo_widths(2), s.halo_widths(1)
        ((0, 2), (0, 0))
        """
        return self._widths.get(dim, (0, 0))

    def shard_index(self, dim: int, device=None) -> int:
        """Which shard of tensor dim ``dim`` a device holds.

        Its combined in-group index over the dim's split axes, major to minor.

        Parameters
        ----------
        dim : int
            A tensor dim.
        device : int or tuple of int, optional
            The device; default this process's (required on an `AbstractMesh`).

        Returns
        -------
        int
            The shard index (0 for a whole dim).

        Raises
        ------
        ShardingError
            No device on an `AbstractMesh`, or a device outside the mesh.

        Examples
        --------
        >>> Sharding(AbstractMesh((2, 3)), [[1, 0]]).shard_index(0, device=4)
        3
        """
        axes = self.dim_axes(dim)
        if not axes:
            return 0
        return self._mesh.in_group_index(self._coords(device), axes)

    def _coords(self, device):
        if device is None:
            if isinstance(self._mesh, Mesh):
                return self._mesh.coords
            raise ShardingError("device: none given, and an AbstractMesh has no 'this process'")
        try:
            if hasattr(device, "__index__") and not isinstance(device, bool):
                return self._mesh.multi_index(device)
            return self._mesh._check_coords(device)
        except MeshError as e:
            raise ShardingError(str(e)) from None

    # -- shapes ----------------------------------------------------------------
    def dim_offsets(self, global_shape) -> tuple:
        """Per tensor dim, the start of every shard plus the end of the last.

        Parameters
        ----------
        global_shape : sequence of int
            The tensor's global shape.

        Returns
        -------
        tuple of tuple of int
            One tuple per dim (``(0, n)`` for a whole dim).

        Raises
        ------
        ShardingError
            The sharding cannot shard ``global_shape``.

        Examples
        --------
        >>> Sharding(AbstractMesh((4,)), [[0]]).dim_offsets((10, 3))
        ((0, 2, 4, 7, 10), (0, 3))
        """
        return _dim_offsets(self, _shape_tuple(global_shape))

    def shard_slices(self, global_shape, device=None) -> tuple:
        """The owned region of ``device`` as slices of the global array.

        Parameters
        ----------
        global_shape : sequence of int
            The tensor's global shape.
        device : int or tuple of int, optional
            The device; default this process's (required on an `AbstractMesh`).

        Returns
        -------
        tuple of slice
            One slice per tensor dim (halos not included).

        Raises
        ------
        ShardingError
            The sharding cannot shard ``global_shape``, or no valid device.

        Examples
        --------
        >>> Sharding(AbstractMesh((2, 3)), [[1], [], [0]]).shard_slices((9, 4, 6), device=4)
        (slice(3, 6, None), slice(0, 4, None), slice(3, 6, None))
        """
        offsets = self.dim_offsets(global_shape)
        coords = self._coords(device)
        out = []
        for d, offs in enumerate(offsets):
            k = self._mesh.in_group_index(coords, self.dim_axes(d)) if self.dim_axes(d) else 0
            out.append(slice(offs[k], offs[k + 1]))
        return tuple(out)

    def shard_shape(self, global_shape, device=None) -> tuple:
        """Shape of the owned part of ``device``'s shard (no halos).

        Parameters
        ----------
        global_shape : sequence of int
            The tensor's global shape.
        device : int or tuple of int, optional
            The device; default this process's (required on an `AbstractMesh`).

        Returns
        -------
        tuple of int
            The owned block's shape.

        Raises
        ------
        ShardingError
            The sharding cannot shard ``global_shape``, or no valid device.

        See Also
        --------
        local_shape, shard_shape

        Examples
        --------
        >>> s = Sharding(AbstractMesh((4,)), [[0]])
        >>> [s.shard_shape((10,), d) for d in range(4)]
        [(2,), (2,), (3,), (3,)]
        """
        return tuple(s.stop - s.start for s in self.shard_slices(global_shape, device))

    def local_shape(self, global_shape, device=None) -> tuple:
        """Shape of ``device``'s local buffer: owned part plus halos on every sharded dim.

        Parameters
        ----------
        global_shape : sequence of int
            The tensor's global shape.
        device : int or tuple of int, optional
            The device; default this process's (required on an `AbstractMesh`).

        Returns
        -------
        tuple of int
            The local buffer's shape.

        Raises
        ------
        ShardingError
            The sharding cannot shard ``global_shape``, or no valid device.

        Examples
        --------
        >>> Sharding(AbstractMesh((4,)), [[0]], halo_sizes=[1, 2]).local_shape((10, 3), device=0)
        (5, 3)
        """
        return tuple(n + sum(self.halo_widths(d)) for d, n in enumerate(self.shard_shape(global_shape, device)))

    def check_shape(self, global_shape) -> tuple:
        """Validate that this sharding can shard ``global_shape``; return it as a tuple.

        Parameters
        ----------
        global_shape : sequence of int
            The tensor's global shape.

        Returns
        -------
        tuple of int
            ``global_shape`` as a tuple.

        Raises
        ------
        ShardingError
            Fewer dims than ``split_axes``, negative sizes, offsets that do not end
            at the dim's size, or a halo wider than a shard.

        Examples
        --------
        >>> s = Sharding(AbstractMesh((2,)), [[0]], halo_sizes=[1, 1])
        >>> s.check_shape([8, 3])
        (8, 3)
        >>> s.check_shape((1, 3))                 # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        meshrt.errors.ShardingError: halo_sizes: dim 0 ... halo 1 is wider than shard ...'s width 0 (shape (1, 3), 2 shards)
        """
        shape = _shape_tuple(global_shape)
        self.dim_offsets(shape)
        return shape

    # -- text forms --------------------------------------------------------------
    def __str__(self):
        if (sub_axes(self._mesh) and not self._halo_sizes and not self._offsets
                and (not self._partial_axes or self._partial_type == "sum")):
            return sdy_text(self)  # Shardy sub-axes: the text they came from, which parses back
        parts = [f"shard.sharding @{self._mesh.name} split_axes = {_list(self._split_axes) if self._split_axes else '[[]]'}"]
        if self._partial_axes:
            parts.append(f"partial = {self._partial_type}{list(self._partial_axes)}")
        if self._halo_sizes:
            parts.append(f"halo_sizes = {list(self._halo_sizes)}")
        if self._offsets:
            parts.append(f"sharded_dims_offsets = {list(self._offsets)}")
        return " ".join(parts)

    @classmethod
    def parse(cls, text: str, mesh: AbstractMesh) -> "Sharding":
        """Read ``mesh.sharding``/``shard.sharding`` text or ``#sdy.sharding<...>``.

        Parameters
        ----------
        text : str
            The sharding in MLIR's shard dialect or Shardy text form.
        mesh : AbstractMesh or Mesh
            The mesh it refers to.

        Returns
        -------
        Sharding
            The sharding (Shardy sub-axes live on a refinement of ``mesh``).

        Raises
        ------
        ShardingError
            Text that cannot be read, or that does not fit ``mesh``.

        Examples
        --------
        >>> m = AbstractMesh((2, 8), ("x", "y"))
        >>> Sharding.parse('#sdy.sharding<@mesh, [{"y":(1)2}, {"x"}]>', m).shard_shape((8, 8), 0)
        (4, 4)
        >>> print(Sharding.parse("shard.sharding @mesh split_axes = [[1], [0]]", m))
        shard.sharding @mesh split_axes = [[1], [0]]
        """
        return parse_sharding(text, mesh, cls)

    def visualize(self, global_shape) -> str:
        """A text picture of which device holds which block.

        Like JAX's ``visualize_array_sharding``.

        Parameters
        ----------
        global_shape : sequence of int
            The tensor's global shape.

        Returns
        -------
        str
            The picture.

        Raises
        ------
        ShardingError
            The sharding cannot shard ``global_shape``.

        Examples
        --------
        >>> print(Sharding(AbstractMesh((2, 2)), [[0], [1]]).visualize((4, 6)))
        shard.sharding @mesh split_axes = [[0], [1]]
        global shape (4, 6) on mesh (2, 2)
        +------------+------------+
        |   dev 0    |   dev 1    |
        | [0:2, 0:3] | [0:2, 3:6] |
        +------------+------------+
        |   dev 2    |   dev 3    |
        | [2:4, 0:3] | [2:4, 3:6] |
        +------------+------------+
        """
        return _visualize(self, _shape_tuple(global_shape))


def _shape_tuple(global_shape) -> tuple:
    if isinstance(global_shape, (int,)) and not isinstance(global_shape, bool):
        global_shape = (global_shape,)
    try:
        shape = tuple(_int(s, "global_shape") for s in global_shape)
    except TypeError:
        raise ShardingError(f"global_shape: {global_shape!r} is not a sequence of ints") from None
    if any(s < 0 for s in shape):
        raise ShardingError(f"global_shape: {shape} has a negative size")
    return shape


@functools.lru_cache(maxsize=4096)
def _dim_offsets(s: Sharding, shape: tuple) -> tuple:
    if len(s.split_axes) > len(shape):
        raise ShardingError(
            f"split_axes: {_list(s.split_axes)} splits {len(s.split_axes)} dims, "
            f"but the tensor has only {len(shape)} (shape {shape})"
        )
    out = []
    given = iter(_split_flat(s.sharded_dims_offsets, [s.dim_split_size(d) for d in s.sharded_dims]))
    for d, size in enumerate(shape):
        n = s.dim_split_size(d)
        if not s.dim_axes(d):
            out.append((0, size))
            continue
        offs = next(given) if s.sharded_dims_offsets else split_offsets(size, n)
        if offs[-1] != size:
            raise ShardingError(
                f"sharded_dims_offsets: dim {d} offsets {list(offs)} end at {offs[-1]}, "
                f"but the tensor's dim {d} has size {size}"
            )
        lo, hi = s.halo_widths(d)
        widths = [b - a for a, b in zip(offs, offs[1:])] if lo or hi else ()
        for k, w in enumerate(widths):
            # A halo is filled from the neighbouring shard alone, so it may not be wider than it.
            if k > 0 and lo > widths[k - 1]:
                raise ShardingError(
                    f"halo_sizes: dim {d} low halo {lo} is wider than shard {k - 1}'s width {widths[k - 1]} "
                    f"(shape {shape}, {n} shards)"
                )
            if k + 1 < n and hi > widths[k + 1]:
                raise ShardingError(
                    f"halo_sizes: dim {d} high halo {hi} is wider than shard {k + 1}'s width {widths[k + 1]} "
                    f"(shape {shape}, {n} shards)"
                )
        out.append(tuple(offs))
    return tuple(out)


def _split_flat(flat, counts):
    out, i = [], 0
    for n in counts:
        out.append(tuple(flat[i : i + n + 1]))
        i += n + 1
    return out


def _axis_label(mesh, a):
    return f"{a} ({mesh.axis_names[a]!r})" if mesh.axis_names else str(a)


def _list(split_axes) -> str:
    return "[" + ", ".join("[" + ", ".join(str(a) for a in axes) + "]" for axes in split_axes) + "]"


def _normalize_split_axes(mesh: AbstractMesh, split_axes) -> tuple:
    if split_axes is None:
        split_axes = ()
    if isinstance(split_axes, (str, int)):
        raise ShardingError(f"split_axes: {split_axes!r} is not a list with one entry per tensor dim, e.g. [[0], [1]]")
    try:
        dims = list(split_axes)
    except TypeError:
        raise ShardingError(f"split_axes: {split_axes!r} is not a list of per-dim axis lists") from None
    out, seen = [], {}
    for d, axes in enumerate(dims):
        if axes is None:
            axes = ()
        elif isinstance(axes, (int, str)) and not isinstance(axes, bool):
            axes = (axes,)
        try:
            items = list(axes)
        except TypeError:
            raise ShardingError(f"split_axes: entry {d} is {axes!r}, not a list of mesh axes") from None
        norm = []
        for a in items:
            try:
                i = mesh.axis_index(a)
            except MeshError as e:
                raise ShardingError(f"split_axes: dim {d}: {e}") from None
            if i in seen:
                raise ShardingError(
                    f"split_axes: mesh axis {_axis_label(mesh, i)} is used twice "
                    f"(dims {seen[i]} and {d}) in {dims!r}"
                )
            seen[i] = d
            norm.append(i)
        out.append(tuple(norm))
    while out and not out[-1]:
        out.pop()
    return tuple(out)


def _normalize_halos(halo_sizes, nsharded: int) -> tuple:
    if halo_sizes is None:
        return ()
    try:
        halos = tuple(_int(h, "halo_sizes") for h in halo_sizes)
    except TypeError:
        raise ShardingError(f"halo_sizes: {halo_sizes!r} is not a list of ints") from None
    if not any(halos) and (len(halos) in (0, 2 * nsharded)):
        return ()
    if len(halos) != 2 * nsharded:
        raise ShardingError(
            f"halo_sizes: {list(halos)} has {len(halos)} entries; expected {2 * nsharded} "
            f"(two per sharded dim, {nsharded} sharded dims)"
        )
    for i, h in enumerate(halos):
        if h < 0:
            raise ShardingError(f"halo_sizes: entry {i} is {h}; halo widths must be >= 0")
    return halos


def _normalize_offsets(offsets, counts) -> tuple:
    if offsets is None:
        return ()
    try:
        flat = tuple(_int(o, "sharded_dims_offsets") for o in offsets)
    except TypeError:
        raise ShardingError(f"sharded_dims_offsets: {offsets!r} is not a list of ints") from None
    if not flat:  # an empty list means "not given", as MLIR prints no attribute for it
        return ()
    expected = sum(n + 1 for n in counts)
    if len(flat) != expected:
        raise ShardingError(
            f"sharded_dims_offsets: {list(flat)} has {len(flat)} entries; expected {expected} "
            f"(per sharded dim, shard count + 1: {[n + 1 for n in counts]})"
        )
    for k, offs in enumerate(_split_flat(flat, counts)):
        if offs[0] != 0:
            raise ShardingError(f"sharded_dims_offsets: sharded dim {k} starts at {offs[0]}, not 0 ({list(offs)})")
        for a, b in zip(offs, offs[1:]):
            if b < a:
                raise ShardingError(
                    f"sharded_dims_offsets: sharded dim {k} offsets {list(offs)} decrease ({a} then {b})"
                )
    return flat


_check.TEXT_TYPES.add(Sharding)  # MESHRT_CHECK compares a sharding by its text
