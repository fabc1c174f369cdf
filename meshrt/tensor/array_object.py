"""The array API standard's array-object attributes of `DistributedTensor` (a base class of it).

``__array_namespace__`` (`meshrt.array_api`), ``device`` (the tensor's `Mesh`), ``to_device`` (a `Mesh` or
a `Sharding`: a reshard), ``mT``, ``__dlpack__`` (this process's block) and ``__dlpack_device__``.

>>> from meshrt import DistributedTensor, Mesh, Sharding                         # doctest: +SKIP
>>> t = DistributedTensor.from_global(np.ones((4, 2)), Sharding(Mesh((-1,)), [[0]]))  # doctest: +SKIP
>>> t.mT.shape, t.device == t.mesh                                               # doctest: +SKIP
((2, 4), True)
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (the example uses it)


class _ArrayAPIObject:
    __slots__ = ()

    def __array_namespace__(self, *, api_version=None):
        """The array API namespace of this tensor, `meshrt.array_api`."""
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"api_version: {api_version!r} is not supported (2021.12 to 2024.12 are)")
        from .dispatch import ABOVE

        return ABOVE.array_api

    @property
    def device(self):
        """The tensor's `Mesh`, which is the array API standard's device of the tensor."""
        return self.sharding.mesh

    def to_device(self, device, /, *, stream=None):
        """This tensor on ``device``: a `Mesh` (dim 0 split over all its axes) or a `Sharding`; a reshard."""
        if stream is not None:
            raise ValueError("stream: meshrt has no streams; pass None")
        from .dispatch import ABOVE

        s = ABOVE.array_api._device.sharding_for(self.ndim, device)
        return self if s == self.sharding else self.reshard(s)

    @property
    def mT(self):
        """The transpose of the last two dims."""
        if self.ndim < 2:
            raise ValueError(f"mT: the tensor must have at least 2 dims, got shape {self.shape}")
        axes = list(range(self.ndim))
        axes[-1], axes[-2] = axes[-2], axes[-1]
        return self.transpose(*axes)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The global array through DLPack: a replicated tensor's block as it is, a split one allgathered
        (every process must call it, as with any collective; `meshrt.array_api.GATHERS` records it)."""
        s = self.sharding
        if any(s.split_axes) or s.is_partial:
            from .dispatch import ABOVE

            if ABOVE.array_api is not None:
                ABOVE.array_api.GATHERS.setdefault(
                    "__dlpack__", "another library reads the array through DLPack (e.g. scikit-learn's move_to "
                                  "numpy): the global array, an allgather")
            block = np.ascontiguousarray(self.gather())
        else:
            block = np.ascontiguousarray(self.interior)
        kw = {}
        if max_version is not None:
            kw["max_version"] = max_version
        if copy is not None:
            kw["copy"] = copy
        if dl_device is not None:
            kw["dl_device"] = dl_device
        return block.__dlpack__(stream=stream, **kw)

    def __dlpack_device__(self):
        """CPU memory: ``(1, 0)``."""
        return (1, 0)
