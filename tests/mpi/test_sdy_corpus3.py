"""The Shardy programs of tests/mlir/sdy that JAX exported for 3 devices too (``n3.mlir``: partially
manual and nested ``shard_map`` bodies, 0-d results; tools/export_sdy_corpus.py), run on 3
processes and compared with JAX's outputs: shapes (a ``tensor<f32>`` is ``()``) and dtypes exactly,
float32 within 1e-5 relative.  At 1, 2 and 4 processes tests/mpi/test_sdy_exec.py runs them."""

import glob
import os

import numpy as np
import pytest
from mpi4py import MPI

from meshrt.mlir import parse_file
from meshrt.mlir.shardy.program import run_sdy

MPI_NPROCS = (3,)

comm = MPI.COMM_WORLD
N = comm.size
CORPUS = os.path.join(os.path.dirname(__file__), "..", "mlir", "sdy")
PROGRAMS = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(CORPUS, "*", "n3.mlir")))


def test_corpus_has_programs_for_3_devices():
    assert {"partial_manual", "scalar_psum", "nested_manual", "partial_collectives", "cond_while",
            "causal_attention", "vmap_indexing"} <= set(PROGRAMS), PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_jax_program_equals_jax_at_3(name):
    d = os.path.join(CORPUS, name)
    ins = [np.load(p) for p in sorted(glob.glob(os.path.join(d, "in*.npy")))]
    outs = [np.load(p) for p in sorted(glob.glob(os.path.join(d, f"n{N}.out*.npy")))]
    res = run_sdy(parse_file(os.path.join(d, f"n{N}.mlir")), "main", ins, comm)
    assert len(res) == len(outs)
    for i, (got, want) in enumerate(zip(res, outs)):
        assert got.shape == want.shape and got.dtype == want.dtype, (name, i, got.shape, got.dtype, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{name} result {i}")
