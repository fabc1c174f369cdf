"""Counting and statistics on `DistributedTensor`: ``np.histogram``, ``np.histogram2d``, ``np.bincount``,
``np.cov``, ``np.corrcoef``, and the stacking forms ``np.hstack``/``np.vstack``/
``np.column_stack``.

A histogram is counted on each process's own block and the counts are summed over the mesh axes that
split the tensor (one allreduce of ``bins`` numbers; replicas count once); where numpy would derive the
bin edges from the data, the global minimum and maximum come first (two small allreduces), so the edges
are numpy's to the bit.  The counts come back as numpy arrays, the same on every process, as numpy
returns them.  ``np.cov`` is built from the tensor's own mean, broadcast subtraction and matmul.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> x = DistributedTensor.from_global(np.linspace(0, 1, 11), Sharding(Mesh((-1,)), [[0]]))
>>> np.histogram(x, bins=2)[0]
array([5, 6])
"""

from __future__ import annotations

import numpy as np

from .. import collectives
from .distributed_tensor import DistributedTensor
from .dispatch import implements


def _split_axes(t: DistributedTensor) -> tuple:
    return tuple(sorted({a for axes in t._sharding.split_axes for a in axes}))


def _global_sum(t: DistributedTensor, local: np.ndarray) -> np.ndarray:
    """``local`` (counted on ``t``'s block) summed over the mesh axes that split ``t``."""
    axes = _split_axes(t)
    if not axes:
        return local
    return collectives.all_reduce(np.ascontiguousarray(local), t.mesh, axes, reduction="sum")


def _block(t: DistributedTensor) -> np.ndarray:
    """This process's owned values (a partial tensor reduced over its partial axes)."""
    return t._full_interior()


def _like_block(name, field, x, t: DistributedTensor):
    """``x`` (a tensor or numpy array of ``t``'s global shape, or None) as ``t``'s block."""
    if x is None:
        return None
    if isinstance(x, DistributedTensor):
        if x.global_shape != t.global_shape:
            raise ValueError(f"{name}: {field} has global shape {x.global_shape}, the data {t.global_shape}")
        s = t.sharding.replace(halo_sizes=None, partial_axes=()) if t.sharding.halo_sizes or t.sharding.is_partial \
            else t.sharding
        if x.sharding != s:
            x = x.reshard(s)
        return _block(x)
    arr = np.asarray(x)
    if arr.shape != t.global_shape:
        raise ValueError(f"{name}: {field} has shape {arr.shape}, the data {t.global_shape}")
    return arr[t.shard_slices]


def _as_tensor(name, x) -> DistributedTensor:
    if not isinstance(x, DistributedTensor):
        raise TypeError(f"{name}: expected a DistributedTensor, got {type(x).__name__}")
    return x


def _outer_edges(name, t: DistributedTensor):
    """numpy's ``_get_outer_edges`` for a range taken from the data: the global min and max."""
    if t.size == 0:
        return 0, 1
    lo, hi = np.min(t), np.max(t)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{name}: autodetected range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _edges_arg(bins):
    """``bins`` as numpy reads it: a gathered tensor of edges, else unchanged."""
    return bins.gather() if isinstance(bins, DistributedTensor) else bins


@implements(np.histogram)
def _np_histogram(a, bins=10, range=None, density=None, weights=None):
    a = _as_tensor("np.histogram", a)
    bins = _edges_arg(bins)
    if isinstance(bins, str):  # numpy's estimators read the whole data set
        w = weights.gather() if isinstance(weights, DistributedTensor) else weights
        return np.histogram(a.gather(), bins=bins, range=range, density=density, weights=w)
    if range is None and np.ndim(bins) == 0:
        range = _outer_edges("np.histogram", a)
    local = _block(a).reshape(-1)
    w = _like_block("np.histogram", "weights", weights, a)
    counts, edges = np.histogram(local, bins=bins, range=range, weights=None if w is None else w.reshape(-1))
    counts = _global_sum(a, counts)
    if density:
        db = np.diff(edges).astype(float)
        return counts / db / counts.sum(), edges
    return counts, edges


@implements(np.histogram2d)
def _np_histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    x = _as_tensor("np.histogram2d", x)
    if x.ndim != 1:
        raise ValueError(f"np.histogram2d: x must be 1-D, got global shape {x.global_shape}")
    yl = _like_block("np.histogram2d", "y", y, x)
    wl = _like_block("np.histogram2d", "weights", weights, x)
    if isinstance(bins, DistributedTensor):
        bins = bins.gather()
    elif isinstance(bins, (list, tuple)):
        bins = [_edges_arg(b) for b in bins]
    nb = bins if isinstance(bins, (list, tuple)) and len(bins) == 2 else [bins, bins]
    if range is None and any(np.ndim(b) == 0 for b in nb):
        ty = y if isinstance(y, DistributedTensor) else DistributedTensor.from_global(np.asarray(y), x.sharding)
        range = [_outer_edges("np.histogram2d", x), _outer_edges("np.histogram2d", ty)]
    h, xe, ye = np.histogram2d(_block(x), yl, bins=bins, range=range, weights=wl)
    h = _global_sum(x, h)
    if density:
        s = h.sum()
        h = h / np.diff(xe).reshape(-1, 1)
        h = h / np.diff(ye).reshape(1, -1)
        h /= s
    return h, xe, ye


@implements(np.bincount)
def _np_bincount(x, /, weights=None, minlength=0):
    x = _as_tensor("np.bincount", x)
    if x.ndim != 1:
        raise ValueError(f"np.bincount: the input must be 1-D, got global shape {x.global_shape}")
    if x.dtype.kind not in "iub":
        raise TypeError(f"np.bincount: cannot cast array data from dtype('{x.dtype}') to dtype('int64') "
                        "according to the rule 'safe'")
    n = int(minlength)
    if x.size:
        if int(np.min(x)) < 0:
            raise ValueError("np.bincount: 'list' argument must have no negative elements")
        n = max(n, int(np.max(x)) + 1)
    w = _like_block("np.bincount", "weights", weights, x)
    counts = np.bincount(_block(x).astype(np.intp, copy=False), weights=w, minlength=n)
    return _global_sum(x, counts)


def _rows(m, rowvar, dtype):
    X = m if isinstance(m, DistributedTensor) else None
    if X is None:
        raise TypeError(f"np.cov: expected a DistributedTensor, got {type(m).__name__}")
    if X.ndim > 2:
        raise ValueError(f"np.cov: m has more than 2 dimensions (global shape {X.global_shape})")
    if X.ndim < 2:
        X = X.reshape(1, -1)
    elif not rowvar and X.global_shape[0] != 1:
        X = X.T
    dt = np.result_type(X.dtype, np.float64) if dtype is None else np.dtype(dtype)
    return X.astype(dt) if X.dtype != dt else X


@implements(np.cov)
def _np_cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if fweights is not None or aweights is not None:
        raise TypeError("np.cov on a DistributedTensor: fweights= and aweights= are not supported (gather() first)")
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    X = _rows(m, rowvar, dtype)
    if y is not None:
        Y = _rows(y if isinstance(y, DistributedTensor) else DistributedTensor.from_global(np.asarray(y),
                  X.sharding.replace(split_axes=[])), rowvar, dtype)
        X = np.concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = X.global_shape[1]
    fact = max(n - ddof, 0)
    avg = np.mean(X, axis=1)
    Xc = X - avg[:, None]
    c = Xc @ (Xc.T.conj() if Xc.dtype.kind == "c" else Xc.T)
    c = c * (1.0 / fact) if fact else c / fact
    return c.reshape(()) if c.global_shape == (1, 1) else c


@implements(np.corrcoef)
def _np_corrcoef(x, y=None, rowvar=True, *, dtype=None, **kwargs):
    if kwargs:
        raise TypeError(f"np.corrcoef on a DistributedTensor: unsupported argument(s) {sorted(kwargs)}")
    c = _np_cov(x, y, rowvar, dtype=dtype)
    g = c.gather()  # nvars x nvars: small, and numpy's own formula on it
    with np.errstate(divide="ignore", invalid="ignore"):
        if g.ndim == 0:
            r = g / g
        else:
            d = np.diag(g)
            std = np.sqrt(d.real)
            r = g / std[:, None] / std[None, :]
            np.clip(r.real, -1, 1, out=r.real)
            if np.iscomplexobj(r):
                np.clip(r.imag, -1, 1, out=r.imag)
    s = c.sharding.replace(partial_axes=(), halo_sizes=None) if c.sharding.is_partial or c.sharding.halo_sizes \
        else c.sharding
    return _replicated_like(r, s)


def _replicated_like(arr: np.ndarray, s) -> DistributedTensor:
    """``arr`` (the same global array on every process) as a tensor of sharding ``s``: each keeps its block."""
    t = DistributedTensor.empty(arr.shape, s, arr.dtype)
    t._interior[...] = arr[t.shard_slices + (Ellipsis,)]
    return t


def _atleast(name, x, nd) -> DistributedTensor:
    x = _as_tensor(name, x)
    if x.ndim >= nd:
        return x
    if nd == 1:
        return x.reshape(1)
    return x.reshape(1, -1) if x.ndim == 1 else x.reshape(1, 1)


@implements(np.hstack)
def _np_hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [_atleast("np.hstack", x, 1) for x in tup]
    if not arrs:
        raise ValueError("need at least one array to concatenate")
    return np.concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype, casting=casting)


@implements(np.vstack, np.row_stack) if hasattr(np, "row_stack") else implements(np.vstack)
def _np_vstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [_atleast("np.vstack", x, 2) for x in tup]
    if not arrs:
        raise ValueError("need at least one array to concatenate")
    return np.concatenate(arrs, axis=0, dtype=dtype, casting=casting)


@implements(np.column_stack)
def _np_column_stack(tup):
    arrs = []
    for x in tup:
        x = _as_tensor("np.column_stack", x)
        arrs.append(x.reshape(-1, 1) if x.ndim < 2 else x)
    if not arrs:
        raise ValueError("need at least one array to concatenate")
    return np.concatenate(arrs, axis=1)

