"""Exception types of meshrt; every one is a ValueError naming the field at fault.

They live in one module below everything else so that each layer can raise
them without importing the layers above it.
"""

__all__ = ["MeshError", "ShardingError", "CollectiveError", "MLIRError", "PerformanceWarning"]


class MeshError(ValueError):
    """An invalid mesh shape, axis, device index or communicator.

    Raised by `AbstractMesh`, `Mesh` and the index maps on them.  The message
    starts with the field at fault (``mesh shape:``, ``mesh axis:``,
    ``device:``, ...).  A subclass of `ValueError`, so ``except ValueError``
    catches it too.

    See Also
    --------
    ShardingError, CollectiveError

    Examples
    --------
    >>> from meshrt import AbstractMesh, MeshError
    >>> try:
    ...     AbstractMesh((2, 0))
    ... except MeshError as e:
    ...     print(e)
    mesh shape: axis 1 has size 0; sizes must be positive (or -1 for dynamic)
    """


class ShardingError(ValueError):
    """An invalid sharding field, text form, or a shape it cannot shard.

    Raised by `Sharding` (construction, `Sharding.parse`, shape checks) and by
    the tensor operations that need a sharding to fit a shape.  A subclass of
    `ValueError`.

    See Also
    --------
    MeshError, CollectiveError

    Examples
    --------
    >>> from meshrt import AbstractMesh, Sharding, ShardingError
    >>> try:
    ...     Sharding(AbstractMesh((2,)), [[0], [0]])
    ... except ShardingError as e:
    ...     print(type(e).__name__)
    ShardingError
    """


class CollectiveError(ValueError):
    """Invalid collective input, or arguments that disagree across a device group.

    Raised by the collectives (`all_reduce`, `all_gather`, ...) for a bad
    argument on the calling process and, with ``MESHRT_CHECK=1``, on every
    process of a group whose members passed different op, attributes, shape or
    dtype.  A subclass of `ValueError`.

    See Also
    --------
    MeshError, ShardingError

    Examples
    --------
    >>> from meshrt import CollectiveError, Mesh, all_reduce
    >>> mesh = Mesh((-1,))          # every process of COMM_WORLD on one axis
    >>> try:
    ...     all_reduce([1, 2], mesh)
    ... except CollectiveError as e:
    ...     print(e)
    all_reduce: x must be a numpy.ndarray, got list
    """


class MLIRError(ValueError):
    """MLIR text that cannot be read, verified or run; the message starts with ``file:line:col:``."""


class PerformanceWarning(UserWarning):
    """A correct result computed at a cost the program may not expect, named with the call site that caused it.

    Warned once per call site (Python's default warning filter) when a split tensor is converted implicitly
    to a numpy array (``np.asarray(t)``, ``A[...] = t``, ``list(t)``): every process gathers the global array
    (one allgather).  ``MESHRT_IMPLICIT_GATHER=error`` turns these conversions into a `TypeError`;
    ``warnings.simplefilter("error", PerformanceWarning)`` turns the warning itself into an exception.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from meshrt import DistributedTensor, Mesh, PerformanceWarning, Sharding
    >>> t = DistributedTensor.from_global(np.arange(3), Sharding(Mesh((-1,)), [[0]]))
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     a = np.asarray(t)
    >>> a, seen[0].category is PerformanceWarning
    (array([0, 1, 2]), True)
    """
