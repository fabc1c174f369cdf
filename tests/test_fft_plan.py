"""The FFT planner (meshrt.tensor.fft_plan), pure: stages, moves and layouts on abstract meshes of any size."""

import numpy as np
import pytest

from meshrt import AbstractMesh, Sharding
from meshrt.tensor.fft import _chunk_dim
from meshrt.tensor.fft_plan import C2C, C2R, R2C, passes_of, plan_fft

C128, F64 = np.dtype(np.complex128), np.dtype(np.float64)


def axes_done(plan):
    return sorted(p.axis for st in plan.stages for p in st.passes)


@pytest.mark.parametrize("mesh_shape,split,shape,moves,result", [
    ((4,), [[0]], (16, 16, 16), 1, [[], [0]]),                        # slab: FFTW-MPI's transposed output
    ((4, 8), [[0], [1]], (32, 64, 16), 2, [[], [0], [1]]),           # pencil
    ((256, 256), [[0], [1]], (512, 512, 512), 2, [[], [0], [1]]),    # 65,536 devices: planned without MPI
    ((4,), [[], [0]], (8, 16), 1, [[0]]),                            # 2-D slab split on columns
    ((2, 2), [[0], [1]], (8, 8), 2, None),                           # no free dim: one dim takes both axes
])
def test_moves_and_result_layouts(mesh_shape, split, shape, moves, result):
    mesh = AbstractMesh(mesh_shape)
    s = Sharding(mesh, split)
    plan = plan_fft("fftn", shape, s, C128)
    assert plan.moves == moves, str(plan)
    assert axes_done(plan) == list(range(len(shape)))
    if result is not None:
        assert plan.result_sharding == Sharding(mesh, result), str(plan)
        back = plan_fft("ifftn", shape, plan.result_sharding, C128)
        assert back.result_sharding == s and back.moves == moves, str(back)
    for st in plan.stages:  # every pass runs on an axis that is whole in its stage's layout
        for p in st.passes:
            assert all(mesh.shape[a] == 1 for a in st.sharding.dim_axes(p.axis)), str(plan)
    assert plan.elements_moved == sum(st.reshard.elements_moved for st in plan.stages if st.reshard)


def test_real_transforms_keep_the_real_pass_first_and_last():
    mesh = AbstractMesh((2, 2))
    s = Sharding(mesh, [[0], [], [1]])  # the real-to-complex axis (2) is split: it moves first
    plan = plan_fft("rfftn", (8, 6, 10), s, F64)
    first = plan.stages[0]
    assert first.reshard is not None and first.passes[0].kind == R2C and first.passes[0].axis == 2
    assert plan.result_shape == (8, 6, 6)
    inv = plan_fft("irfftn", plan.result_shape, plan.result_sharding, C128, (8, 6, 10), (0, 1, 2))
    last = inv.stages[-1].passes[-1]
    assert last.kind == C2R and last.axis == 2 and last.n == 10
    assert inv.result_shape == (8, 6, 10)


def test_passes_follow_numpys_order_and_s():
    assert [(p.kind, p.axis, p.n) for p in passes_of("fftn", (4, 5, 6), (4, 7, 3), (0, 1, 2))] == \
        [(C2C, 2, 3), (C2C, 1, 7), (C2C, 0, 4)]
    assert [(p.kind, p.axis) for p in passes_of("irfftn", (4, 5), (4, 8), (0, 1))] == [(C2C, 0), (C2R, 1)]
    plan = plan_fft("fftn", (6, 6), Sharding(AbstractMesh((3,)), [[0]]), C128, (4, 9), (0, 1))
    assert plan.result_shape == (4, 9)


def test_one_dimensional_tensor_is_gathered_and_sliced_back():
    mesh = AbstractMesh((4,))
    s = Sharding(mesh, [[0]])
    plan = plan_fft("fft", (10,), s, C128, (10,), (0,))
    assert plan.result_sharding == s
    assert [step.op for st in plan.stages if st.reshard for step in st.reshard.steps] == ["all_gather", "all_slice"]


def test_size_one_mesh_axes_split_nothing():
    mesh = AbstractMesh((1, 4))
    s = Sharding(mesh, [[0], [1]])
    plan = plan_fft("fftn", (8, 8, 8), s, C128)
    assert plan.moves == 1, str(plan)  # dim 0 is whole: only the mesh axis of size 4 moves
    assert plan_fft("ifftn", (8, 8, 8), plan.result_sharding, C128).result_sharding == s


def test_pipelining_cuts_along_a_dim_whole_on_both_sides():
    mesh = AbstractMesh((4,))
    plan = plan_fft("fftn", (16, 16, 16), Sharding(mesh, [[0]]), C128)
    first, move = plan.stages
    c, a1, a2, b2, b3 = _chunk_dim(move.reshard.src, move, first.passes, 3)
    assert c == 2 and [p.axis for p in a1] == [2] and [p.axis for p in a2] == [1]
    assert [p.axis for p in b2] == [0] and b3 == ()
    plan2 = plan_fft("fft2", (16, 16), Sharding(mesh, [[0]]), C128)  # 2-D: no dim stays whole
    assert _chunk_dim(plan2.stages[1].reshard.src, plan2.stages[1], plan2.stages[0].passes, 2) is None


def test_workers_from_the_environment(monkeypatch):
    from meshrt.fft import workers

    monkeypatch.setenv("MESHRT_FFT_WORKERS", "3")
    assert workers() == 3
    monkeypatch.setenv("MESHRT_FFT_WORKERS", "many")
    with pytest.raises(ValueError, match="MESHRT_FFT_WORKERS='many'"):
        workers()
    monkeypatch.delenv("MESHRT_FFT_WORKERS")
    monkeypatch.setenv("MPI_LOCALNRANKS", "64")  # more processes on the node than cores: one thread each
    assert workers() == 1


def test_explain_op_takes_the_functions_keywords():
    from meshrt import DistributedTensor, Mesh, explain_op

    t = DistributedTensor.from_global(np.ones((4, 6, 5)), Sharding(Mesh((-1,)), [[0]]))
    plan = explain_op(np.fft.rfftn, t, axes=(0, 2), s=(4, 8))
    assert plan.result_shape == (4, 6, 5) and "rfft(axis=2, n=8)" in str(plan)
    with pytest.raises(TypeError, match="unexpected keyword"):
        explain_op(np.add, t, t, axes=(0,))
    with pytest.raises(ValueError):  # numpy's own error for s and axes of different lengths
        explain_op(np.fft.fftn, t, s=(4,), axes=(0, 1))
