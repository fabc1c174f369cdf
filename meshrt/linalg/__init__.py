"""Linear algebra on `DistributedTensor`: contractions (``matmul``, ``dot``, ``tensordot``, ``einsum``),
TSQR for tall row-split matrices, and the ``np.linalg`` functions.

``matmul`` plans the sharding of every operand dim and runs one local numpy call per device
(`meshrt.linalg.matmul`); ``tsqr`` factors a row-split tall matrix without moving its rows
(`meshrt.linalg.tall`); `meshrt.linalg.numpy_linalg` registers ``np.linalg.*`` for tensors. The array
API's ``linalg`` extension (`meshrt.array_api.linalg`) calls into this package.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> x = DistributedTensor.from_global(np.eye(4), Sharding(Mesh((-1,)), [[0]]))
>>> float(matmul(x, x).sum())
4.0
"""

import numpy as np  # noqa: F401  (the example uses it)

from .matmul import dot, einsum, explain_einsum, explain_matmul, matmul, tensordot
from .tall import tsqr, tsqr_svd, tsqr_svdvals
from . import numpy_linalg  # noqa: F401  (np.linalg.* for DistributedTensor)

__all__ = ["matmul", "dot", "tensordot", "einsum", "explain_matmul", "explain_einsum", "tsqr", "tsqr_svd",
           "tsqr_svdvals"]
