"""The compiled call path of the collectives (`meshrt._collfront.set_c_calls`): every planned
collective, blocking and ``wait=False``, against a numpy model, with the C calls on (counted by
``c_hits``, so a front that silently fell back to mpi4py fails) and off (none counted).

Each case runs three times: a first call may plan (Python path), the next two take the front.
"""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import Mesh
from meshrt import _collfront as F
from meshrt import collectives as C

MPI_NPROCS = (1, 2, 3, 4)

comm = MPI.COMM_WORLD
DTYPES = ["float64", "int32", "complex64", "uint8", "float32"]


def _x(k, shape, dtype):
    """Group rank ``k``'s input: small integers, exact in every dtype and under sum/product."""
    return ((np.arange(int(np.prod(shape))) * 3 + 5 * k) % 4 + 1).reshape(shape).astype(dtype)


def _cases(n):
    """``(name, call(x, mesh, wait), reference(inputs, k))`` for every collective the C path takes;
    ``x`` has ``2n`` rows of 3 (pieces of 2 rows split over the group)."""
    def rsum(xs):
        return np.sum(np.stack(xs), axis=0, dtype=xs[0].dtype)

    return [
        ("all_reduce", lambda x, m, w: C.all_reduce(x, m, wait=w), lambda xs, k: rsum(xs)),
        ("all_reduce_product", lambda x, m, w: C.all_reduce(x, m, None, "product", wait=w),
         lambda xs, k: np.prod(np.stack(xs), axis=0, dtype=xs[0].dtype)),
        ("reduce", lambda x, m, w: C.reduce(x, m, None, "sum", n - 1, wait=w),
         lambda xs, k: rsum(xs) if k == n - 1 else None),
        ("reduce_scatter", lambda x, m, w: C.reduce_scatter(x, m, wait=w),
         lambda xs, k: rsum(xs)[2 * k:2 * k + 2]),
        ("broadcast", lambda x, m, w: C.broadcast(x, m, root=n - 1, wait=w), lambda xs, k: xs[n - 1]),
        ("all_gather", lambda x, m, w: C.all_gather(x, m, wait=w), lambda xs, k: np.concatenate(xs)),
        ("gather", lambda x, m, w: C.gather(x, m, root=n // 2, wait=w),
         lambda xs, k: np.concatenate(xs) if k == n // 2 else None),
        ("scatter", lambda x, m, w: C.scatter(x, m, root=0, wait=w), lambda xs, k: xs[0][2 * k:2 * k + 2]),
        ("all_to_all", lambda x, m, w: C.all_to_all(x, m, wait=w),
         lambda xs, k: np.concatenate([v[2 * k:2 * k + 2] for v in xs])),
        ("shift", lambda x, m, w: C.shift(x, m, None, 0, 1, rotate=True, wait=w), lambda xs, k: xs[(k - 1) % n]),
    ]


@pytest.fixture(scope="module")
def mesh():
    m = Mesh((comm.size,), comm=comm)
    yield m
    m.free()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("wait", [True, False])
@pytest.mark.parametrize("c_calls", [True, False])
def test_every_collective(mesh, dtype, wait, c_calls):
    n, k = comm.size, comm.rank
    xs = [_x(j, (2 * n, 3), dtype) for j in range(n)]
    old = F.c_calls()
    try:
        available = F.set_c_calls(c_calls)
        if c_calls:
            assert available, "the C calls found no MPI library functions"
        for name, call, ref in _cases(n):
            want = ref(xs, k)
            for rep in range(3):
                before = F.c_hits()
                got = call(xs[k].copy(), mesh, wait)
                took = F.c_hits() - before
                if not wait:
                    assert isinstance(got, C.Handle), name
                    h, got = got, got.wait()
                    assert h.wait() is got  # done: the same result at once
                if want is None:
                    assert got is None, (name, rep)
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype} wait={wait} call {rep}")
                    assert got.dtype == np.dtype(dtype), name
                # n == 1: every op returns early, nothing to call; a first call may plan in Python
                if not c_calls or n == 1:
                    assert took == 0, (name, rep, took)
                elif rep > 0:
                    assert took == 1, (name, rep, took)
    finally:
        F.set_c_calls(old)


def test_out_and_test(mesh):
    """``out=`` receives the C call's result; a `Handle` from the C path answers ``test()``."""
    n = comm.size
    x = np.full(4, comm.rank + 1.0)
    out = np.empty(4)
    for _ in range(3):
        r = C.all_reduce(x, mesh, out=out)
        assert r is out
        np.testing.assert_array_equal(out, np.full(4, n * (n + 1) / 2))
        h = C.all_gather(x, mesh, wait=False)
        while not h.test():
            pass
        assert h.test()
        np.testing.assert_array_equal(h.wait(), np.repeat(np.arange(1.0, n + 1), 4))


def test_send_recv(mesh):
    """send/recv between ranks 0 and 1, blocking and not, through the C calls."""
    if comm.size < 2:
        pytest.skip("needs 2 processes")
    x = np.arange(5, dtype=np.int64) + 10 * comm.rank
    before = F.c_hits()
    for rep in range(3):
        if comm.rank == 0:
            C.send(x, mesh, None, 1)
            got = C.recv(x, mesh, None, 1)
            np.testing.assert_array_equal(got, np.arange(5) + 10)
            h = C.send(x, mesh, None, 1, wait=False)
            assert h.wait() is None
        elif comm.rank == 1:
            got = C.recv(x, mesh, None, 0)
            C.send(x, mesh, None, 0)
            np.testing.assert_array_equal(got, np.arange(5))
            h = C.recv(x, mesh, None, 0, wait=False)
            np.testing.assert_array_equal(h.wait(), np.arange(5))
    if comm.rank < 2:
        took = F.c_hits() - before
        assert took >= 6 if F.c_calls() else took == 0  # the first of each direction may plan in Python


def test_environment_switch(mesh):
    """``MESHRT_C_CALLS=0`` (tests/test_c_calls_off.py runs this file so) leaves every call on mpi4py."""
    import os

    off = os.environ.get("MESHRT_C_CALLS", "1") == "0"
    x = np.ones(3)
    before = F.c_hits()
    for _ in range(3):
        C.all_reduce(x, mesh)
    took = F.c_hits() - before
    if off or comm.size == 1:
        assert took == 0
    else:
        assert took >= 2


@pytest.mark.parametrize("wait", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "int16", ">f4"])
def test_unequal_pieces(mesh, dtype, wait):
    """all_gather with ``sizes=`` (MPI_Allgatherv) and an uneven all_to_all (MPI_Alltoallv) take
    the C path too, in bytes, whatever the dtype (a non-native one included)."""
    from meshrt.sharding import split_offsets

    n, k = comm.size, comm.rank
    sizes = [j % 3 + 1 for j in range(n)]
    pieces = [_x(j, (sizes[j], 2), dtype) for j in range(n)]
    wides = [_x(j + 7, (2 * n + 1, 2), dtype) for j in range(n)]
    off = split_offsets(2 * n + 1, n)
    want_a2a = np.concatenate([w[off[k]:off[k + 1]] for w in wides])
    for rep in range(3):
        before = F.c_hits()
        got = C.all_gather(pieces[k], mesh, None, 0, sizes=sizes, wait=wait)
        got = got if wait else got.wait()
        np.testing.assert_array_equal(got, np.concatenate(pieces))
        assert got.dtype == np.dtype(dtype)
        a2a = C.all_to_all(wides[k], mesh, wait=wait)
        a2a = a2a if wait else a2a.wait()
        np.testing.assert_array_equal(a2a, want_a2a)
        took = F.c_hits() - before
        if not F.c_calls() or n == 1:
            assert took == 0
        elif rep > 0:
            assert took == 2, (rep, took)


def test_reshard_exchange_takes_the_c_path(mesh):
    """reshard's point-to-point steps (permute, exchange) post and wait from C (`_collfront.exchange`)."""
    from meshrt.reshard import execute_reshard, plan_reshard
    from meshrt.sharding import Sharding

    n = comm.size
    shape = (4 * n + 3, 5)
    src = Sharding(mesh, [[0]])
    dst = Sharding(mesh, [[0]], sharded_dims_offsets=[0] + [min(shape[0], 2 * k + 1) for k in range(1, n)]
                   + [shape[0]])
    plan = plan_reshard(src, dst, shape)
    if n > 1:
        assert [s.op for s in plan.steps] == ["exchange"]
    g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    have, need = src.shard_slices(shape), dst.shard_slices(shape)
    before = F.c_hits()
    got = execute_reshard(plan, np.ascontiguousarray(g[have]), mesh)
    np.testing.assert_array_equal(got, g[need])
    took = F.c_hits() - before
    assert took == (1 if F.c_calls() and n > 1 else 0)
