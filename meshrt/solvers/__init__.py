"""Linear solvers on DistributedTensors: Krylov methods (scipy.sparse.linalg's signatures) and geometric multigrid.

>>> A = Laplacian(b, boundary="dirichlet", h=1.0 / (n + 1))     # doctest: +SKIP
>>> x, info = cg(A, b, rtol=1e-8, M=Multigrid(A))               # doctest: +SKIP

See docs/solvers.md.
"""

from .krylov import bicgstab, cg, gmres, minres
from .multigrid import Multigrid, multigrid
from .operator import Laplacian, LinearOperator, StencilOperator, aslinearoperator

__all__ = ["cg", "bicgstab", "gmres", "minres", "multigrid", "Multigrid", "Laplacian", "LinearOperator",
           "StencilOperator", "aslinearoperator"]
