"""Stencils on DistributedTensors: a user's Numba kernel on boxes, the halo exchange hidden behind it.

``apply`` is `apply_stencil` with its boundary conditions (`Dirichlet`, `Neumann`), ghost filling and
staggered grids; ``bench`` is ``meshrt bench stencil``, the weak-scaling benchmark of a stencil step.
The halo exchange itself is `meshrt.halo`: the tensor's own `update_halo` uses it, a layer below
the tensor, while stencils work on tensors, a layer above.
"""

from .apply import (
    Dirichlet, Neumann, StencilPlan, apply_stencil, clear_stencil_cache, fill_ghosts, plan_stencil, staggered,
    t_eff, update_halos,
)

__all__ = ["apply_stencil", "update_halos", "fill_ghosts", "Dirichlet", "Neumann", "StencilPlan", "plan_stencil",
           "staggered", "t_eff", "clear_stencil_cache"]
