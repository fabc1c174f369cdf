"""np.fft on DistributedTensors against numpy on the global array, at any process count: every
function, 1-D/2-D/3-D meshes, slabs, pencils, halos and uneven offsets, every norm, s= cropping and
padding, axes subsets, single precision, out=, layouts of round trips, and numpy's errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mpi4py import MPI

import meshrt
from meshrt import DistributedTensor as DT, Sharding, ShardingError, explain_op
from meshrt.tensor.fft import plan_for

MPI_NPROCS = (1, 2, 3, 4, 8)

comm = MPI.COMM_WORLD
N = comm.size
NORMS = (None, "backward", "ortho", "forward")


def close(got, want, what, rtol=None):
    """``got`` (a tensor) is numpy's ``want``: shape, dtype, and values to 1e-12 (1e-5 single) relative."""
    assert isinstance(got, DT), what
    assert got.global_shape == want.shape and got.dtype == want.dtype, (what, got.global_shape, got.dtype,
                                                                       want.shape, want.dtype)
    g = got.gather()
    if rtol is None:
        rtol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-300)
    err = float(np.abs(g - want).max(initial=0.0))
    assert err <= rtol * scale, f"{what}: max error {err:.3g}, relative {err / scale:.3g}"


def data(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def cases(meshes):
    """(name, sharding, uneven global shape): slabs, pencils, a dim on two axes, halos, offsets, replicated."""
    m1, m2, m3 = meshes["1d"], meshes["2d"], meshes["3d"]
    offs = [0] + [2 + 3 * k for k in range(1, N)] + [3 * N + 4]
    offs[-2] = min(offs[-2], offs[-1] - 1)
    return [
        ("slab rows", Sharding(m1, [[0]]), (2 * N + 3, 6, 5)),
        ("slab cols 2-d", Sharding(m1, [[], [0]]), (7, 2 * N + 1)),
        ("pencil", Sharding(m2, [[0], [1]]), (2 * m2.shape[0] + 1, 2 * m2.shape[1] + 3, 4)),
        ("pencil swapped 2-d", Sharding(m2, [[1], [0]]), (2 * m2.shape[1] + 2, 2 * m2.shape[0] + 1)),
        ("dim on two axes", Sharding(m2, [[0, 1]]), (2 * N + 1, 3, 4)),
        ("offsets + halo", Sharding(m1, [[0]], halo_sizes=[1, 1], sharded_dims_offsets=offs), (offs[-1], 6)),
        ("3-d mesh", Sharding(m3, [[0], [1], [2]], halo_sizes=[1] * 6), tuple(2 * s + 1 for s in m3.shape)),
        ("replicated", Sharding(m2, []), (5, 4)),
    ]


ND = ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn")
ONE = ("fft", "ifft", "rfft", "ihfft")


def test_every_function_every_norm(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        real, cplx = data(shape, seed=k), data(shape, np.complex128, seed=k + 20)
        t_r, t_c = DT.from_global(real, s), DT.from_global(cplx, s)
        for j, fname in enumerate(ND + ONE):
            norm = NORMS[(j + k) % 4]
            x, t = (real, t_r) if fname.startswith(("r", "ih")) else (cplx, t_c)
            f = getattr(np.fft, fname)
            close(f(t, norm=norm), f(x, norm=norm), f"{name}: {fname} norm={norm}")
            if fname in ONE and k % 2 == 0:
                ax = (k // 2) % len(shape)
                close(f(t, axis=ax, norm=norm), f(x, axis=ax, norm=norm), f"{name}: {fname} axis={ax}")
        # the inverse real transforms and hfft take Hermitian input: a forward transform's output
        for fname, fwd in (("irfftn", "rfftn"), ("irfft2", "rfft2"), ("irfft", "rfft"), ("hfft", "ihfft")):
            f = getattr(np.fft, fname)
            half, t_half = getattr(np.fft, fwd)(real), getattr(np.fft, fwd)(t_r)
            norm = NORMS[k % 4]
            close(f(t_half, norm=norm), f(half, norm=norm), f"{name}: {fname} norm={norm}")
            if fname != "hfft":
                n = shape[-1]
                kw = {"s": shape[-2:] if fname == "irfft2" else shape} if fname != "irfft" else {"n": n}
                if fname == "irfftn":
                    kw["axes"] = tuple(range(len(shape)))
                close(f(t_half, **kw), f(half, **kw), f"{name}: {fname} back to odd length {kw}")


def test_s_cropping_padding_axes_subsets_and_single_precision(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        x = data(shape, np.complex128, seed=k)
        t, t_re = DT.from_global(x, s), DT.from_global(x.real.copy(), s)
        nd = len(shape)
        sizes = tuple(n + (3 if d % 2 else -1) for d, n in enumerate(shape))  # pad some axes, crop others
        close(np.fft.fftn(t, s=sizes, axes=tuple(range(nd))), np.fft.fftn(x, s=sizes, axes=tuple(range(nd))),
              f"{name}: fftn s={sizes}")
        close(np.fft.ifftn(t, s=sizes[:1], axes=(0,)), np.fft.ifftn(x, s=sizes[:1], axes=(0,)), f"{name}: ifftn s[0]")
        close(np.fft.fft(t, n=shape[0] + 2, axis=0), np.fft.fft(x, n=shape[0] + 2, axis=0), f"{name}: fft n pad")
        for axes in ((0,), (nd - 1, 0), (-1,)):
            close(np.fft.fftn(t, axes=axes), np.fft.fftn(x, axes=axes), f"{name}: fftn axes={axes}")
            close(np.fft.rfftn(t_re, axes=axes), np.fft.rfftn(x.real, axes=axes), f"{name}: rfftn axes={axes}")
        close(np.fft.fftn(t, axes=(0, 0)), np.fft.fftn(x, axes=(0, 0)), f"{name}: an axis twice")
        if k % 2 == 0:
            x32 = x.astype(np.complex64)
            t32 = DT.from_global(x32, s)
            close(np.fft.fftn(t32), np.fft.fftn(x32), f"{name}: complex64 fftn")
            r32 = x.real.astype(np.float32)
            close(np.fft.rfftn(DT.from_global(r32, s)), np.fft.rfftn(r32), f"{name}: float32 rfftn")
            xi = (x.real * 10).astype(np.int32)
            close(np.fft.fft2(DT.from_global(xi, s)), np.fft.fft2(xi), f"{name}: int32 fft2 -> complex128")


def test_round_trips_come_back_to_the_input_layout(meshes):
    m1, m2, m3 = meshes["1d"], meshes["2d"], meshes["3d"]
    for s, shape in ((Sharding(m1, [[0]]), (2 * N, 6, 5)), (Sharding(m2, [[0], [1]]), (6, 2 * N, 4)),
                     (Sharding(m1, [[0]]), (4 * N, 9)), (Sharding(m3, [[0], [1], [2]]), (5, 6, 7))):
        x = data(shape, seed=3)
        t = DT.from_global(x, s)
        k = np.fft.rfftn(t)
        back = np.fft.irfftn(k, s=shape, axes=range(len(shape)))
        close(back, np.fft.irfftn(np.fft.rfftn(x), s=shape, axes=range(len(shape))), f"round trip {s}")
        fwd, inv = plan_for("fftn", t), plan_for("ifftn", np.fft.fftn(t))
        if s.mesh is m3 and N == 8:  # 2x2x2 mesh: no dim is free at first, the inverse ends elsewhere
            assert fwd.moves <= 3, str(fwd)
            continue
        assert back.sharding == s, (s, k.sharding, back.sharding)
        assert inv.moves == fwd.moves and inv.result_sharding == s, (str(fwd), str(inv))
    # a slab: the transposed output saves the move back (one all-to-all each way)
    if N > 1:
        t = DT.from_global(data((2 * N, 4, 3)), Sharding(m1, [[0]]))
        plan = explain_op(np.fft.fftn, t)
        assert plan.moves == 1 and plan.result_sharding == Sharding(m1, [[], [0]]), str(plan)
        assert "all_to_all" in str(plan) and "bytes" in str(plan)


def test_out_and_sharding_keyword(meshes):
    m1 = meshes["1d"]
    x = data((2 * N + 1, 6), np.complex128, seed=5)
    t = DT.from_global(x, Sharding(m1, [[0]]))
    for target in (Sharding(m1, [[0]]), Sharding(m1, [[], [0]]), Sharding(m1, [])):
        out = DT.zeros(x.shape, target, np.complex128)
        r = np.fft.fft2(t, out=out)
        assert r is out and out.sharding == target
        close(out, np.fft.fft2(x), f"out <{target}>")
        r = meshrt.fft.ifft2(t, sharding=target, norm="ortho")
        assert r.sharding == target
        close(r, np.fft.ifft2(x, norm="ortho"), f"sharding= <{target}>")
    close(meshrt.fft.fftn(t, workers=1), np.fft.fftn(x), "workers=1")


def test_partial_input(meshes):
    m2 = meshes["2d"]
    x = data((5, 2 * N), seed=8)
    s = Sharding(m2, [[], [1]], partial_axes=[0])
    t = DT.from_global(x / m2.shape[0], s.replace(partial_axes=()))
    p = DT.from_local(np.ascontiguousarray(t.interior), s, x.shape)
    close(np.fft.fft2(p), np.fft.fft2(x), "partial input", rtol=1e-12)


def test_shifts_and_frequencies(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)[:4]):
        x = data(shape, seed=k)
        t = DT.from_global(x, s)
        close(np.fft.fftshift(t), np.fft.fftshift(x), f"{name}: fftshift", rtol=0)
        close(np.fft.ifftshift(t, axes=0), np.fft.ifftshift(x, axes=0), f"{name}: ifftshift", rtol=0)
        close(np.fft.ifftshift(np.fft.fftshift(t, axes=(-1,)), axes=(-1,)), x, f"{name}: shift round trip", rtol=0)
    s = Sharding(meshes["1d"], [[0]])
    for n, d in ((2 * N + 3, 0.5), (8, 1.0)):
        close(meshrt.fft.fftfreq(n, d, sharding=s), np.fft.fftfreq(n, d), "fftfreq", rtol=0)
        close(meshrt.fft.rfftfreq(n, d, sharding=s), np.fft.rfftfreq(n, d), "rfftfreq", rtol=0)
        np.testing.assert_array_equal(meshrt.fft.fftfreq(n, d), np.fft.fftfreq(n, d))


def numpy_error(f, x, *args, **kwargs):
    try:
        f(x, *args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the type numpy raises is what is compared
        return type(e)
    return None


def test_bad_input_raises_numpys_error_everywhere(meshes):
    s = Sharding(meshes["1d"], [[0]])
    x = data((2 * N + 1, 5), np.complex128)
    t = DT.from_global(x, s)
    bad = [(np.fft.fft, (), {"axis": 2}), (np.fft.fftn, (), {"axes": (0, 3)}), (np.fft.fftn, ((4,),), {"axes": (0, 1)}),
           (np.fft.rfft, (), {}), (np.fft.rfftn, (), {}), (np.fft.fft, (), {"n": 0}), (np.fft.ifft2, (), {"norm": "x"}),
           (np.fft.irfftn, ((2, 0),), {"axes": (0, 1)}), (np.fft.fftn, ((2, 2.5),), {"axes": (0, 1)})]
    for f, args, kw in bad:
        want = numpy_error(f, x, *args, **kw)
        assert want is not None, (f.__name__, args, kw)
        with pytest.raises(want):
            f(t, *args, **kw)
    with pytest.raises(ValueError, match="wrong shape"):
        np.fft.fft(t, out=DT.zeros((2 * N + 1, 4), s, np.complex128))
    with pytest.raises(TypeError, match="dtype"):
        np.fft.fft(t, out=DT.zeros(x.shape, s, np.complex64))
    with pytest.raises(TypeError, match="DistributedTensor"):
        np.fft.fft(t, out=np.zeros(x.shape, np.complex128))
    with pytest.raises(ShardingError, match="sharding"):
        meshrt.fft.fft(t, sharding="rows")
    with pytest.raises(ShardingError, match="mesh"):  # out on another mesh: no layout to move the result into
        np.fft.fft(t, out=DT.zeros(x.shape, Sharding(meshes["2d"], [[0]]), np.complex128))
    comm.Barrier()  # every process raised (none went on into an exchange)


@settings(max_examples=20, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_hypothesis_against_numpy(meshes, draw):
    """Random shapes, layouts, transforms, axes subsets, s and norms; derandomized: every rank draws the same."""
    d = draw.draw
    nd = d(st.integers(1, 3))
    shape = tuple(d(st.lists(st.integers(1, 2 * N + 3), min_size=nd, max_size=nd)))
    mesh = meshes[d(st.sampled_from(["1d", "2d", "3d"]))]
    axes_pool = list(range(mesh.ndim))
    split = [[] for _ in range(nd)]
    for a in axes_pool:
        dim = d(st.integers(-1, nd - 1))
        if dim >= 0:
            split[dim].append(a)
    s = Sharding(mesh, split)
    fname = d(st.sampled_from(["fftn", "ifftn", "rfftn", "fft", "rfft", "ihfft", "fft2"]))
    norm = d(st.sampled_from(NORMS))
    real = fname in ("rfftn", "rfft", "ihfft")
    x = data(shape, np.float64 if real else np.complex128, seed=d(st.integers(0, 99)))
    t = DT.from_global(x, s)
    f = getattr(np.fft, fname)
    if fname in ("fft", "rfft", "ihfft"):
        ax = d(st.integers(-nd, nd - 1))
        n = d(st.one_of(st.none(), st.integers(1, 2 * N + 4)))
        close(f(t, n, ax, norm), f(x, n, ax, norm), f"{fname} {shape} <{s}> n={n} axis={ax} {norm}")
        return
    if fname == "fft2" and nd < 2:
        fname, f = "fftn", np.fft.fftn
    axes = tuple(d(st.permutations(range(nd)))[:d(st.integers(1, nd))]) if fname != "fft2" else (-2, -1)
    sizes = tuple(d(st.integers(1, 2 * N + 4)) for _ in axes) if d(st.booleans()) else None
    close(f(t, sizes, axes, norm), f(x, sizes, axes, norm), f"{fname} {shape} <{s}> s={sizes} axes={axes} {norm}")


@pytest.mark.parametrize("chunk", [0, 96])
def test_pipelined_and_plain_exchanges_agree_with_numpy(meshes, monkeypatch, chunk):
    """Small chunks: many pipelined chunks per move (and uneven last ones); 0: the plain reshard."""
    import meshrt.tensor.fft as mfft

    monkeypatch.setattr(mfft, "CHUNK_BYTES", chunk)
    for k, (name, s, shape) in enumerate(cases(meshes)):
        x = data(shape, np.complex128, seed=k)
        t, t_re = DT.from_global(x, s), DT.from_global(x.real.copy(), s)
        close(np.fft.fftn(t), np.fft.fftn(x), f"{name} chunk={chunk}: fftn")
        close(np.fft.ifftn(np.fft.fftn(t), norm="forward"), np.fft.ifftn(np.fft.fftn(x), norm="forward"),
              f"{name} chunk={chunk}: ifftn of fftn")
        k_hat = np.fft.rfftn(t_re)
        close(k_hat, np.fft.rfftn(x.real), f"{name} chunk={chunk}: rfftn")
        axes = tuple(range(len(shape)))
        close(np.fft.irfftn(k_hat, s=shape, axes=axes), np.fft.irfftn(np.fft.rfftn(x.real), s=shape, axes=axes),
              f"{name} chunk={chunk}: irfftn")
        sizes = tuple(n + (2 if d % 2 else -1) for d, n in enumerate(shape))
        close(np.fft.fftn(t, s=sizes, axes=axes), np.fft.fftn(x, s=sizes, axes=axes), f"{name} chunk={chunk}: s=")


def test_numpy_backend_without_scipy(meshes, monkeypatch):
    """Where scipy is absent the local transforms are numpy.fft's: the same results."""
    import meshrt.tensor.fft as mfft

    monkeypatch.setattr(mfft, "_scipy_fft", None)
    for k, (name, s, shape) in enumerate(cases(meshes)[:4]):
        x = data(shape, np.complex128, seed=k)
        t = DT.from_global(x, s)
        close(np.fft.fftn(t, norm="ortho"), np.fft.fftn(x, norm="ortho"), f"{name} numpy backend: fftn")
        r = DT.from_global(x.real.copy(), s)
        close(np.fft.rfftn(r), np.fft.rfftn(x.real), f"{name} numpy backend: rfftn")
        close(np.fft.hfft(np.fft.ihfft(r)), np.fft.hfft(np.fft.ihfft(x.real)), f"{name} numpy backend: hfft")
