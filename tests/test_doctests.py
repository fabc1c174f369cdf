"""The docstring examples of the MPI-free modules are tests too."""

import doctest
import importlib
import inspect
import re

import pytest

MODULES = [
    "meshrt", "meshrt.errors", "meshrt.reduction", "meshrt.mesh", "meshrt.halo", "meshrt.reshard", "meshrt.spmd",
    "meshrt.launch", "meshrt._keys", "meshrt._fusevm", "meshrt._slots", "meshrt.kernels",
    "meshrt.runtime", "meshrt.runtime.mpich", "meshrt.runtime.mpiexec", "meshrt.runtime.mpi", "meshrt.runtime.heartbeat",
    "meshrt.runtime.warmup", "meshrt.tensor.fuse", "meshrt.tensor.numpy_shifts",
    "meshrt.runtime.hosts", "meshrt.runtime.restart", "meshrt.io.checkpoint",
    "meshrt.sharding", "meshrt.sharding.spec", "meshrt.sharding.text", "meshrt.sharding.chunks",
    "meshrt.collectives", "meshrt.collectives.common", "meshrt.collectives.reductions", "meshrt.collectives.move",
    "meshrt.collectives.p2p", "meshrt.collectives.index_ops",
    "meshrt.tensor", "meshrt.tensor.dispatch", "meshrt.tensor.layout", "meshrt.tensor.index_plan",
    "meshrt.tensor.reductions", "meshrt.tensor.files", "meshrt.tensor.index_exec", "meshrt.tensor.ufunc",
    "meshrt.tensor.distributed_tensor", "meshrt.tensor.numpy_reductions", "meshrt.tensor.elementwise",
    "meshrt.solvers.grid", "meshrt.linalg", "meshrt.linalg.matmul", "meshrt.linalg.tall", "meshrt.linalg.numpy_linalg", "meshrt.linalg.blockcyclic", "meshrt.linalg.cyclic", "meshrt.linalg.factor", "meshrt.linalg.dense", "meshrt.linalg.lapack", "meshrt.linalg.model", "meshrt.linalg.eigen", "meshrt.linalg.svd", "meshrt.tensor.fastpath", "meshrt.tensor.advanced_index", "meshrt.tensor.numpy_stats",
    "meshrt.tensor.numpy_misc",
    "meshrt.tensor.array_object", "meshrt.array_api", "meshrt.array_api._device", "meshrt.array_api._funcs", "meshrt.array_api._sorting",
    "meshrt.array_api.linalg", "meshrt.array_api.fft", "meshrt.tensor.fft_plan", "meshrt.tensor.fft", "meshrt.fft",
    "meshrt.stencil", "meshrt.stencil.apply", "meshrt.io", "meshrt.io.npy", "meshrt.io.vtk", "meshrt.io.series",
    "meshrt.io.dataset",
    "meshrt.mlir", "meshrt.mlir.ir", "meshrt.mlir.syntax", "meshrt.mlir.syntax.lexer", "meshrt.mlir.syntax.attributes",
    "meshrt.mlir.syntax.reader", "meshrt.mlir.syntax.printer",
    "meshrt.mlir.dialects", *[f"meshrt.mlir.dialects.{d}" for d in (
        "affine", "arith", "builtin", "cf", "func", "linalg", "scf", "sdy", "sdy_attrs", "shard", "stablehlo", "tensor",
        "tosa", "vector", "memref", "mpi")],
    "meshrt.mlir.interpreters", "meshrt.mlir.interpreters.arith", "meshrt.mlir.interpreters.linalg",
    "meshrt.mlir.interpreters.tosa", "meshrt.mlir.interpreters.stablehlo", "meshrt.mlir.interpreters.shard",
    "meshrt.mlir.interpreters.spmd", "meshrt.mlir.interpreters.buffers", "meshrt.mlir.interpreters.mpi",
    "meshrt.mlir.lowering",
    "meshrt.mlir.shardy", "meshrt.mlir.shardy.propagation", "meshrt.mlir.shardy.window", "meshrt.mlir.shardy.index",
    "meshrt.mlir.shardy.program", "meshrt.mlir.shardy.cli",
]

# Names the examples of a module's docstrings use that the module itself does not import, and the
# module that has them: the methods of DistributedTensor that live on its base classes below
# the class's module, and the collectives' implementations, whose examples call the public names.
EXTRA_GLOBALS = {"meshrt.tensor.files": ("meshrt", ["DistributedTensor"]),
                 "meshrt.tensor.reductions": ("meshrt", ["DistributedTensor"]),
                 "meshrt.collectives.reductions": ("meshrt.collectives", None),
                 "meshrt.collectives.move": ("meshrt.collectives", None),
                 "meshrt.collectives.p2p": ("meshrt.collectives", None)}  # None: its public globals

# The optional libraries whose files a module's examples write (DistributedTensor.to_zarr, to_hdf5).
NEEDS = {"meshrt.tensor.files": ("zarr", "h5py"), "meshrt.io.series": ("zarr", "h5py")}


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


def test_every_mlir_module_has_examples_run_here():
    """meshrt/mlir grows fastest (a module per dialect in dialects/ and interpreters/): each of its
    modules is listed above, and shows at least one example."""
    import pathlib

    import meshrt.mlir

    root = pathlib.Path(meshrt.mlir.__file__).parent
    names = [".".join(["meshrt", "mlir", *p.relative_to(root).with_suffix("").parts]).removesuffix(".__init__")
             for p in sorted(root.rglob("*.py"))]
    assert sorted(set(names) - set(MODULES)) == []
    empty = [n for n in names if not doctest.DocTestFinder().find(importlib.import_module(n)) or not any(
        t.examples for t in doctest.DocTestFinder().find(importlib.import_module(n)))]
    assert empty == [], f"modules of meshrt/mlir without a docstring example: {empty}"


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
