"""``@spmd``: write a function on local arrays with explicit collectives, call it on
DistributedTensors (like JAX's ``shard_map``).

>>> @spmd(in_shardings=(row_split,), out_shardings=replicated)       # doctest: +SKIP
... def total(x):
...     return all_reduce(x.sum(axis=0, keepdims=True), mesh, [0])
>>> total(t).gather()                                                 # doctest: +SKIP
"""

from __future__ import annotations

import functools

import numpy as np

from .runtime import mpi as _mpi
from .errors import ShardingError
from .sharding.spec import Sharding
from .tensor.distributed_tensor import DistributedTensor

__all__ = ["spmd"]


def spmd(fn=None, *, in_shardings, out_shardings, out_shapes=None):
    """Write a function on local arrays with explicit collectives; call it on tensors.

    Like JAX's ``shard_map``: the decorated ``fn(*locals)`` receives each
    argument's local buffer (halos included) and returns a local array or a
    tuple of them, which come back as `DistributedTensor`.  Usable as
    ``@spmd(...)`` or ``spmd(fn, ...)``.

    Parameters
    ----------
    fn : callable, optional
        ``fn(*locals) -> local or tuple of locals``; omitted when used as a
        decorator factory.
    in_shardings : Sharding or sequence of (Sharding or None)
        One entry per positional argument (a single Sharding for one argument).
        A `DistributedTensor` is resharded to its entry when they differ; a numpy
        array is taken as the full global array, the same on every process;
        ``None`` passes the argument through untouched (a tensor then arrives as
        its ``.local``).
    out_shardings : Sharding or sequence of Sharding
        A Sharding, or one per returned array; partial shardings are allowed
        (the function returns this device's partial values).
    out_shapes : sequence of int or sequence of sequence of int, optional
        The outputs' global shapes; when omitted they are derived collectively
        from the local shapes (one small all-reduce per split dim).

    Returns
    -------
    callable
        The wrapped function, taking the global arguments and returning a
        `DistributedTensor` (or a tuple, one per ``out_shardings`` entry).

    Raises
    ------
    ShardingError
        At decoration: an entry of ``in_shardings``/``out_shardings`` is not a
        `Sharding`, or ``out_shapes`` has the wrong length.  At a call: the
        wrong number of arguments, an argument that is neither a tensor nor an
        array, or a result whose count or shape does not fit ``out_shardings``
        (raised on every process).

    See Also
    --------
    DistributedTensor.from_local, all_reduce

    Examples
    --------
    Column sums of a row-split matrix: a local sum, then an `all_reduce`:

    >>> from meshrt import DistributedTensor, Mesh, Sharding, all_reduce
    >>> mesh = Mesh((-1,), ("x",))
    >>> rows, replicated = Sharding(mesh, [["x"]]), Sharding(mesh, [])
    >>> @spmd(in_shardings=(rows,), out_shardings=replicated)
    ... def column_sums(x):
    ...     return all_reduce(x.sum(axis=0, keepdims=True), mesh, ["x"])
    >>> t = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), rows)
    >>> column_sums(t).gather()
    array([[6., 9.]])
    """
    single_in = isinstance(in_shardings, Sharding) or in_shardings is None
    ins = (in_shardings,) if single_in else tuple(in_shardings)
    single_out = isinstance(out_shardings, Sharding)
    outs = (out_shardings,) if single_out else tuple(out_shardings)
    for i, s in enumerate(ins):
        if s is not None and not isinstance(s, Sharding):
            raise ShardingError(f"in_shardings: entry {i} is {s!r}, not a Sharding or None")
    for i, s in enumerate(outs):
        if not isinstance(s, Sharding):
            raise ShardingError(f"out_shardings: entry {i} is {s!r}, not a Sharding")
    shapes = None
    if out_shapes is not None:
        flat = all(isinstance(n, int) for n in out_shapes)
        shapes = (tuple(out_shapes),) if single_out and flat else tuple(tuple(s) for s in out_shapes)
        if len(shapes) != len(outs):
            raise ShardingError(f"out_shapes: {len(shapes)} shapes for {len(outs)} out_shardings")

    if fn is None:
        return functools.partial(spmd, in_shardings=in_shardings, out_shardings=out_shardings, out_shapes=out_shapes)

    @functools.wraps(fn)
    def wrapper(*args):
        if len(args) != len(ins):
            raise ShardingError(
                f"{fn.__name__}: called with {len(args)} positional arguments, but in_shardings has {len(ins)}"
            )
        local_args = [_to_local(a, s, i, fn.__name__) for i, (a, s) in enumerate(zip(args, ins))]
        result = fn(*local_args)
        results = (result,) if single_out else result
        if not isinstance(results, (tuple, list)) or len(results) != len(outs):
            raise ShardingError(
                f"{fn.__name__}: returned {type(result).__name__}, but out_shardings expects {len(outs)} array(s)"
            )
        wrapped = []
        for i, (r, s) in enumerate(zip(results, outs)):
            shape = shapes[i] if shapes else _global_shape(np.asarray(r), s, i, fn.__name__)
            wrapped.append(_from_local(np.asarray(r), s, shape, i, fn.__name__))
        return wrapped[0] if single_out else tuple(wrapped)

    return wrapper


def _to_local(arg, sharding, i, name):
    if isinstance(arg, DistributedTensor):
        if sharding is not None and arg.sharding != sharding:
            arg = arg.reshard(sharding)
        return arg.local
    if sharding is None:
        return arg
    if isinstance(arg, np.ndarray) or np.isscalar(arg):
        return DistributedTensor.from_global(np.asarray(arg), sharding).local
    raise ShardingError(f"{name}: argument {i} is {type(arg).__name__}; a Sharding was given for it, "
                        "so pass a DistributedTensor or a numpy array")


def _global_shape(local: np.ndarray, s: Sharding, i, name) -> tuple:
    if len(s.split_axes) > local.ndim:
        raise ShardingError(f"{name}: output {i} has {local.ndim} dims, but out_shardings[{i}] splits {len(s.split_axes)}")
    owned = [n - sum(s.halo_widths(d)) for d, n in enumerate(local.shape)]
    shape = []
    for d, n in enumerate(owned):
        axes = s.dim_axes(d)
        if not axes:
            shape.append(n)
        elif s.sharded_dims_offsets:
            shape.append(_offsets_end(s, d))
        else:
            with _mpi.internal("spmd", f"global shape of {name}", (s.mesh, axes)):
                shape.append(s.mesh.group(axes).allreduce(n))
    return tuple(shape)


def _offsets_end(s: Sharding, dim: int) -> int:
    k = s.sharded_dims.index(dim)
    counts = [s.dim_split_size(d) + 1 for d in s.sharded_dims]
    start = sum(counts[:k])
    return s.sharded_dims_offsets[start + counts[k] - 1]


def _from_local(local: np.ndarray, s: Sharding, shape, i, name):
    try:  # from_local shares the verdict, so a wrong shape on one process raises on all
        return DistributedTensor.from_local(np.ascontiguousarray(local), s, shape)
    except ShardingError as e:
        raise ShardingError(f"{name}: output {i}: {e}") from None
