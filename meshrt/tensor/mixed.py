"""Elementwise ufuncs over mixed operands: tensors of different shardings or shapes, numpy arrays.

``DistributedTensor.__array_ufunc__`` hands such calls here (through
`meshrt.tensor.dispatch.ABOVE`); the sharding rule itself is `meshrt.tensor.elementwise.plan_elementwise`.
"""

from __future__ import annotations

import numpy as np

from ..runtime import check as _check
from .elementwise import array_fingerprint, describe_operand, plan_elementwise
from ..errors import ShardingError
from .distributed_tensor import DistributedTensor
from .ufunc import _result_dtypes
from .layout import _layout


def elementwise_call(ufunc, inputs, outs, kwargs):
    """An elementwise ufunc over mixed operands, by `meshrt.tensor.elementwise.plan_elementwise`'s rule."""
    name = f"np.{ufunc.__name__}"
    if any(o is not None and not isinstance(o, DistributedTensor) for o in outs):
        if not all(o is None or isinstance(o, np.ndarray) for o in outs):
            return NotImplemented
        # a numpy target (``arr += t``): it holds the global array on every process, so the tensors are
        # gathered and numpy computes it whole
        args = [x.gather() if isinstance(x, DistributedTensor) else x for x in inputs]
        kw = {k: v.gather() if isinstance(v, DistributedTensor) else v for k, v in kwargs.items()}
        return ufunc(*args, out=outs if ufunc.nout > 1 else outs[0], **kw)
    if "where" in kwargs and not isinstance(kwargs["where"], bool):
        raise TypeError(f"{name}: where= with operands of different shardings or numpy arrays is not supported; "
                        "reshard them to one sharding first")
    target = outs[0] if outs and outs[0] is not None else None
    ops = [describe_operand(x, DistributedTensor) for x in inputs]
    plan = plan_elementwise(ops, None if target is None else target._sharding, name,
                            None if target is None else target._global_shape)
    shape, result = plan.result_shape, plan.result_sharding
    for o in outs:
        if o is not None and o._global_shape != shape:
            raise ShardingError(f"{name}: out has global shape {o._global_shape}; the result's is {shape}")
    slices = _layout(result, shape).slices
    mesh = result.mesh
    args = []
    for i, (x, act) in enumerate(zip(inputs, plan.actions)):
        if act.action == "scalar":
            args.append(x)
        elif act.action == "local":
            args.append(x._interior)
        elif act.action == "reshard":
            args.append(x.reshard(act.target)._interior)
        else:
            if isinstance(x, DistributedTensor):
                arr = x._interior
            else:
                arr = x
                if _check.CHECK:
                    _check.agree(mesh.comm, array_fingerprint(x), f"{name} numpy operand {i}", ShardingError)
            lead = len(shape) - arr.ndim
            args.append(arr[tuple(slices[lead + j] if n == shape[lead + j] else slice(None)
                                  for j, n in enumerate(arr.shape))])
    if outs:
        results = ufunc(*args, out=tuple(o._interior if o is not None else None for o in outs), **kwargs)
        results = (results,) if ufunc.nout == 1 else results
        wrapped = tuple(o if o is not None else DistributedTensor._wrap(r, target) for o, r in zip(outs, results))
        return wrapped[0] if ufunc.nout == 1 else wrapped
    dtypes = _result_dtypes(ufunc, args, kwargs)
    if dtypes is not None and "where" not in kwargs:  # computed straight into the new blocks
        news = tuple(DistributedTensor.empty(shape, result, dt) for dt in dtypes)
        ufunc(*args, out=tuple(t._interior for t in news), **kwargs)
        return news[0] if ufunc.nout == 1 else news
    results = ufunc(*args, **kwargs)
    results = (results,) if ufunc.nout == 1 else results
    news = []
    for r in results:
        new = DistributedTensor.empty(shape, result, np.asarray(r).dtype)
        new._interior[...] = r
        news.append(new)
    return news[0] if ufunc.nout == 1 else tuple(news)
