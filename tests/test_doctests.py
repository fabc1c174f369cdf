"""The docstring examples of the MPI-free modules are tests too."""

import doctest
import importlib

import pytest

MODULES = ["meshrt", "meshrt.mesh", "meshrt.sharding", "meshrt._sharding_text", "meshrt.reshard",
           "meshrt.reduction", "meshrt.halo", "meshrt._indexing", "meshrt._keys", "meshrt.mpiexec",
           "meshrt._npreduce", "meshrt._elementwise", "meshrt.chunks", "meshrt.vtk", "meshrt.launch",
           "meshrt._mpi", "meshrt.kernels", "meshrt.errors", "meshrt.collectives", "meshrt.stencil", "meshrt.spmd",
           "meshrt.io", "meshrt.matmul", "meshrt.tensor"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
