"""The docstring examples of the MPI-free modules are tests too."""

import doctest
import importlib
import inspect
import re

import pytest

MODULES = ["meshrt", "meshrt.mesh", "meshrt.sharding", "meshrt._sharding_text", "meshrt.reshard",
           "meshrt.reduction", "meshrt.halo", "meshrt._indexing", "meshrt._keys", "meshrt.mpiexec",
           "meshrt._npreduce", "meshrt._elementwise", "meshrt.chunks", "meshrt.vtk", "meshrt.launch",
           "meshrt._mpi", "meshrt.kernels", "meshrt._tensor_dispatch", "meshrt._tensor_layout", "meshrt._tensor_reduce",
           "meshrt.errors", "meshrt.collectives", "meshrt.stencil", "meshrt.spmd", "meshrt.io", "meshrt.matmul",
           "meshrt.tensor", "meshrt._tensor_files", "meshrt._tensor_index", "meshrt._tensor_ufunc",
           "meshrt._collectives_common", "meshrt._collectives_reduce", "meshrt._collectives_move",
           "meshrt._collectives_p2p", "meshrt._collectives_index"]

# Names the examples of a module's docstrings use that the module itself does not import, and the
# module that has them: the methods of DistributedTensor that live on its base classes below
# tensor.py, and the collectives' implementations, whose examples call the public names.
EXTRA_GLOBALS = {"meshrt._tensor_files": ("meshrt", ["DistributedTensor"]),
                 "meshrt._tensor_reduce": ("meshrt", ["DistributedTensor"]),
                 "meshrt._collectives_reduce": ("meshrt.collectives", None),
                 "meshrt._collectives_move": ("meshrt.collectives", None),
                 "meshrt._collectives_p2p": ("meshrt.collectives", None)}  # None: its public globals

# The optional libraries whose files a module's examples write (DistributedTensor.to_zarr, to_hdf5).
NEEDS = {"meshrt._tensor_files": ("zarr", "h5py")}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    for library in NEEDS.get(name, ()):
        pytest.importorskip(library, reason=f"{name}'s examples write files with {library} (the io extra; "
                                            "zarr 3 needs Python >= 3.11)")
    extra = {}
    if name in EXTRA_GLOBALS:
        source, names = EXTRA_GLOBALS[name]
        source = importlib.import_module(source)
        extra = {n: v for n, v in vars(source).items() if (n in names if names else not n.startswith("_"))}
    result = doctest.testmod(importlib.import_module(name), extraglobs=extra, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def _numpy_sections_missing(obj) -> list:
    """The numpy-style parts a public docstring lacks: an example, Parameters (when the
    callable takes any), Returns (a function whose annotation is not ``-> None``)."""
    doc = inspect.getdoc(obj) or ""
    missing = [] if ">>>" in doc else ["an example"]
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # e.g. an enum: nothing to call
        return missing
    documented = re.search(r"(Parameters|Attributes)\n----" if inspect.isclass(obj) else r"Parameters\n----", doc)
    if [p for p in signature.parameters if p not in ("self", "args", "kwargs")] and not documented:
        missing.append("Parameters")
    returns_none = signature.return_annotation in (None, "None")
    if not inspect.isclass(obj) and not returns_none and not re.search(r"(Returns|Yields)\n----", doc):
        missing.append("Returns")
    return missing


def test_every_public_name_has_a_numpy_style_docstring_with_an_example():
    import meshrt
    import meshrt.io.npy

    names = [(f"meshrt.{n}", getattr(meshrt, n)) for n in meshrt.__all__]
    names += [(f"meshrt.io.{n}", getattr(meshrt.io, n)) for n in meshrt.io.__all__]
    lacking = {name: m for name, obj in names if (m := _numpy_sections_missing(obj))}
    assert not lacking, f"public docstrings lacking numpy-style parts: {lacking}"
