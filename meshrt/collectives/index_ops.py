"""The shard dialect's index ops: `process_linear_index`, `process_multi_index`, `mesh_shape`,
`neighbors_linear_indices` and `shard_shape` (local: no communication).

``collectives.py`` re-exports them beside the collectives, as the dialect lists them.
"""

from __future__ import annotations

from ..errors import CollectiveError
from ..mesh import Mesh


def process_linear_index(mesh) -> int:
    """This process's linear device index.

    Parameters
    ----------
    mesh : Mesh
        The mesh bound to the communicator.

    Returns
    -------
    int
        The row-major linear index of this process's device (``mesh.rank``).

    Raises
    ------
    CollectiveError
        ``mesh`` is not a `Mesh` (an `AbstractMesh` has no process).

    See Also
    --------
    process_multi_index, Mesh.rank

    Examples
    --------
    >>> process_linear_index(Mesh((-1,)))
    0
    """
    if not isinstance(mesh, Mesh):
        raise CollectiveError(f"process_linear_index: {mesh!r} is not a Mesh; an AbstractMesh has no process")
    return mesh.rank


def process_multi_index(mesh, axes=None) -> tuple:
    """This process's coordinates over ``axes`` (None = all).

    Parameters
    ----------
    mesh : Mesh
        The mesh bound to the communicator.
    axes : sequence of int or str, optional
        The mesh axes whose coordinates are returned, in this order (None = all).

    Returns
    -------
    tuple of int
        One coordinate per axis.

    Raises
    ------
    CollectiveError
        ``mesh`` is not a `Mesh` (an `AbstractMesh` has no process).
    MeshError
        ``axes`` names an axis the mesh does not have.

    See Also
    --------
    process_linear_index, Mesh.coords

    Examples
    --------
    >>> mesh = Mesh((1, -1), ("x", "y"))
    >>> process_multi_index(mesh), process_multi_index(mesh, ["y"])
    ((0, 0), (0,))
    """
    if not isinstance(mesh, Mesh):
        raise CollectiveError(f"process_multi_index: {mesh!r} is not a Mesh; an AbstractMesh has no process")
    return tuple(mesh.coords[a] for a in mesh.axes(axes, field="axes"))


def mesh_shape(mesh, axes=None) -> tuple:
    """Sizes of the mesh ``axes`` (None = all).

    Parameters
    ----------
    mesh : AbstractMesh
        Any mesh (no process needed).
    axes : sequence of int or str, optional
        The mesh axes, in the order wanted (None = all).

    Returns
    -------
    tuple of int
        One size per axis.

    Raises
    ------
    MeshError
        ``axes`` names an axis the mesh does not have, or repeats one.

    Examples
    --------
    >>> from meshrt import AbstractMesh
    >>> m = AbstractMesh((2, 3, 4), ("x", "y", "z"))
    >>> mesh_shape(m), mesh_shape(m, ["z", "x"])
    ((2, 3, 4), (4, 2))
    """
    return tuple(mesh.shape[a] for a in mesh.axes(axes, field="axes"))


def neighbors_linear_indices(mesh, device, split_axes) -> tuple:
    """``(down, up)`` linear indices of ``device``'s neighbours along ``split_axes``.

    The neighbours are the previous and next device along the linearized
    ``split_axes`` (first listed axis outermost); ``-1`` where there is none.

    Parameters
    ----------
    mesh : AbstractMesh
        Any mesh (no process needed).
    device : int or tuple of int
        The device, as a linear index or mesh coordinates (on a `Mesh`, None
        means this process's device).
    split_axes : sequence of int or str
        The mesh axes along which neighbours are counted.

    Returns
    -------
    tuple of int
        ``(down, up)``.

    Raises
    ------
    MeshError
        An unknown axis or a device outside the mesh.

    See Also
    --------
    AbstractMesh.neighbors, shift

    Examples
    --------
    >>> from meshrt import AbstractMesh
    >>> m = AbstractMesh((10, 20, 30))
    >>> neighbors_linear_indices(m, (1, 2, 3), [1])
    (633, 693)
    >>> neighbors_linear_indices(m, (0, 0, 0), [0])
    (-1, 600)
    """
    return mesh.neighbors(split_axes, device)


def shard_shape(shape, sharding, device=None) -> tuple:
    """Shape of ``device``'s shard of a tensor of ``shape`` (default: this process's).

    Parameters
    ----------
    shape : sequence of int
        The tensor's global shape.
    sharding : Sharding
        How the tensor is sharded.
    device : int or tuple of int, optional
        The device (linear index or coordinates); required on an `AbstractMesh`,
        default this process's device on a `Mesh`.

    Returns
    -------
    tuple of int
        The shard's shape (halos not included).

    Raises
    ------
    ShardingError
        ``shape`` does not fit the sharding.
    MeshError
        No device given on an `AbstractMesh`, or a device outside the mesh.

    See Also
    --------
    Sharding.shard_shape, Sharding.local_shape

    Examples
    --------
    Uneven sizes follow MLIR's rule, extra elements on the trailing shards:

    >>> from meshrt import AbstractMesh, Sharding
    >>> s = Sharding(AbstractMesh((4,)), [[0]])
    >>> [shard_shape((10, 3), s, device=d) for d in range(4)]
    [(2, 3), (2, 3), (3, 3), (3, 3)]
    """
    return sharding.shard_shape(shape, device)
