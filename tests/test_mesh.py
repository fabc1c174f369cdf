"""AbstractMesh arithmetic, shape parsing and mesh text forms (no MPI needed)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from meshrt import AbstractMesh, Mesh, MeshError
from meshrt.mesh import dims_create, parse_mesh_text, parse_shape


def test_seed_linear_index_and_neighbors():
    m = AbstractMesh((10, 20, 30))
    assert m.linear_index((1, 2, 3)) == 663
    assert m.multi_index(663) == (1, 2, 3)
    assert m.neighbors([1], (1, 2, 3)) == (633, 693)


def test_seed_group_order_3_1_vs_1_3():
    m = AbstractMesh((2, 3, 4, 5))
    i, k = 1, 2
    g31 = m.group_devices([3, 1], (i, 0, k, 0))
    order = [m.multi_index(d) for d in g31]
    # first listed axis (3) is outermost: (i,1,k,0) precedes (i,0,k,1) and (i,2,k,0)
    assert order.index((i, 1, k, 0)) < order.index((i, 0, k, 1))
    assert order.index((i, 1, k, 0)) < order.index((i, 2, k, 0))
    assert order[:4] == [(i, 0, k, 0), (i, 1, k, 0), (i, 2, k, 0), (i, 0, k, 1)]
    g13 = m.group_devices([1, 3], (i, 0, k, 0))
    assert [m.multi_index(d) for d in g13][:2] == [(i, 0, k, 0), (i, 0, k, 1)]
    assert sorted(g31) == sorted(g13) and g31 != g13
    assert m.in_group_index((i, 2, k, 3), [3, 1]) == 3 * 3 + 2
    assert m.in_group_index((i, 2, k, 3), [1, 3]) == 2 * 5 + 3


def test_neighbors_several_axes_linearized_and_edges():
    m = AbstractMesh((2, 3, 4))
    # linearized over axes [2, 0]: index = c2 * 2 + c0
    assert m.neighbors([2, 0], (0, 1, 0)) == (-1, m.linear_index((1, 1, 0)))
    assert m.neighbors([2, 0], (1, 1, 0)) == (m.linear_index((0, 1, 0)), m.linear_index((0, 1, 1)))
    assert m.neighbors([2, 0], (0, 1, 1)) == (m.linear_index((1, 1, 0)), m.linear_index((1, 1, 1)))
    assert m.neighbors([2, 0], (1, 1, 3)) == (m.linear_index((0, 1, 3)), -1)
    assert m.neighbors([0], (0, 0, 0)) == (-1, m.linear_index((1, 0, 0)))
    assert m.neighbors([0], (1, 0, 0)) == (0, -1)
    assert m.neighbors([], (1, 2, 3)) == (-1, -1)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
@settings(derandomize=True, max_examples=60, deadline=None)
def test_index_maps_roundtrip_and_match_numpy(shape, data):
    m = AbstractMesh(shape)
    for lin in range(m.size):
        c = m.multi_index(lin)
        assert c == tuple(int(x) for x in np.unravel_index(lin, shape))
        assert m.linear_index(c) == lin
    axes = data.draw(st.permutations(range(len(shape))).flatmap(
        lambda p: st.integers(0, len(p)).map(lambda n: tuple(p[:n]))))
    dev = data.draw(st.integers(0, m.size - 1))
    group = m.group_devices(axes, dev)
    assert len(group) == m.axes_size(axes)
    assert group[m.in_group_index(dev, axes)] == dev
    for k, d in enumerate(group):
        assert m.in_group_index(d, axes) == k
        assert m.group_coords(axes, k) == tuple(m.multi_index(d)[a] for a in axes)
        outside = [a for a in range(len(shape)) if a not in axes]
        assert all(m.multi_index(d)[a] == m.multi_index(dev)[a] for a in outside)


def test_axis_names_everywhere():
    m = AbstractMesh((2, 3), ("x", "y"))
    assert m.axes(["y", 0]) == (1, 0)
    assert m.neighbors(["y"], (0, 1)) == m.neighbors([1], (0, 1))
    assert m.in_group_from_multi(["y", "x"], (2, 1)) == 2 * 2 + 1
    assert m.in_group_from_multi(["y"], 2) == 2


@pytest.mark.parametrize(
    "text, shape",
    [("2x?x4", (2, -1, 4)), ("3", (3,)), ("?", (-1,)), ([2, None, -1], (2, -1, -1)), ((4,), (4,))],
)
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize(
    "n, shape, expected",
    [(12, (-1, 2, -1), (3, 2, 2)), (8, (-1, -1, -1), (2, 2, 2)), (6, (-1, -1), (3, 2)), (12, (-1, -1), (4, 3)),
     (7, (-1, -1), (7, 1)), (8, (2, -1, 4), (2, 1, 4)), (16, (-1, 2, -1), (4, 2, 2)), (4, (4,), (4,)),
     (1, (-1, -1, -1), (1, 1, 1)), (24, (-1, -1, -1), (4, 3, 2))],
)
def test_dims_create_matches_mpi(n, shape, expected):
    from mpi4py import MPI

    assert dims_create(n, shape) == expected
    mpi_dims = MPI.Compute_dims(n, [0 if s == -1 else s for s in shape])
    assert tuple(mpi_dims) == expected


@pytest.mark.parametrize(
    "text, shape, names, name",
    [
        ("mesh.mesh @mesh0(shape = 2x?x4)", (2, -1, 4), None, "mesh0"),
        ("shard.grid @g(shape = 2x4)", (2, 4), None, "g"),
        ('sdy.mesh @m = <["x"=2, "y"=4]>', (2, 4), ("x", "y"), "m"),
        ('sdy.mesh @m = <["data"=1]>', (1,), ("data",), "m"),
    ],
)
def test_parse_mesh_text(text, shape, names, name):
    assert parse_mesh_text(text) == (shape, names, name)


def test_mesh_parse_and_print_roundtrip_serial():
    m = Mesh.parse("shard.grid @g(shape = ?)")
    assert m.shape == (1,) and m.name == "g" and str(m) == "shard.grid @g(shape = 1)"
    assert parse_mesh_text(str(m)) == ((1,), None, "g")
    s = Mesh.parse('sdy.mesh @m = <["x"=1]>')
    assert parse_mesh_text(str(s)) == ((1,), ("x",), "m")
    assert m.group([0]).Get_size() == 1 and m.group(()).Get_size() == 1
    m.free()
    s.free()


def test_value_semantics():
    a, b = AbstractMesh((2, 3), ("x", "y")), AbstractMesh([2, 3], ["x", "y"])
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != AbstractMesh((2, 3)) and a != AbstractMesh((3, 2), ("x", "y"))
    assert a.size == 6 and a.ndim == 2


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: AbstractMesh((2, -1)), r"mesh shape: 2x\? has a dynamic axis"),
        (lambda: AbstractMesh(()), "rank 0"),
        (lambda: AbstractMesh((2, 0)), "axis 1 has size 0"),
        (lambda: AbstractMesh("2xz"), "axis 1 is 'z'"),
        (lambda: AbstractMesh((2, 2.5)), "axis 1 is 2.5"),
        (lambda: AbstractMesh((2, 3), ("x",)), "axis_names: .* has 1 names for a mesh of rank 2"),
        (lambda: AbstractMesh((2, 3), ("x", "x")), "repeats a name"),
        (lambda: AbstractMesh((2, 3)).axis_index(2), "mesh axis: 2 is out of range"),
        (lambda: AbstractMesh((2, 3), ("x", "y")).axis_index("z"), "unknown name 'z'"),
        (lambda: AbstractMesh((2, 3)).axes([0, 0]), "appears twice"),
        (lambda: AbstractMesh((2, 3)).linear_index((2, 0)), r"coords: \(2, 0\) is not a device"),
        (lambda: AbstractMesh((2, 3)).multi_index(6), "device: 6 is out of range"),
        (lambda: AbstractMesh((2, 3)).in_group_from_multi([1], (3,)), r"root: \(3,\) is outside"),
        (lambda: AbstractMesh((2, 3)).neighbors([0]), "no device given"),
        (lambda: dims_create(6, (4, -1)), "needs a multiple of 4 processes"),
        (lambda: dims_create(6, (2, 2)), "needs exactly 4 processes, but the communicator has 6"),
        (lambda: parse_mesh_text("mesh.mesh @m(shape = 2xx)"), "cannot read shape"),
        (lambda: parse_mesh_text("tensor.mesh @m"), "cannot parse"),
        (lambda: parse_mesh_text('sdy.mesh @m = <["x"]>'), "cannot read axis"),
    ],
)
def test_mesh_errors(call, match):
    with pytest.raises(MeshError, match=match):
        call()


def test_mesh_size_mismatch_serial():
    with pytest.raises(MeshError, match="needs a multiple of 2 processes.* but the communicator has 1"):
        Mesh((2, -1))
    with pytest.raises(MeshError, match="mesh shape: 3 needs exactly 3 processes"):
        Mesh((3,))


def test_group_order_all_permutations_small():
    m = AbstractMesh((2, 2, 3))
    for r in range(1, 4):
        for axes in itertools.permutations(range(3), r):
            for dev in range(m.size):
                g = m.group_devices(axes, dev)
                coords = [tuple(m.multi_index(d)[a] for a in axes) for d in g]
                assert coords == sorted(coords)
