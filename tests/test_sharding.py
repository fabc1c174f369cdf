"""Sharding values: normalization, shard shapes, text forms, visualize, validation."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from meshrt import AbstractMesh, ShardingError
from meshrt.sharding.spec import Sharding, split_offsets, split_sizes


def test_seed_offsets_24x20x32_and_8x12x32():
    s = Sharding(AbstractMesh((2, 2)), [[0], [1]], sharded_dims_offsets=[0, 24, 32, 0, 20, 32])
    assert s.shard_shape((32, 32, 32), 0) == (24, 20, 32)
    assert s.shard_shape((32, 32, 32), (1, 1)) == (8, 12, 32)
    assert s.shard_slices((32, 32, 32), (1, 0)) == (slice(24, 32), slice(0, 20), slice(0, 32))


def test_seed_offsets_widths_2_3_4_5():
    s = Sharding(AbstractMesh((4,)), [[], [0]], sharded_dims_offsets=[0, 2, 5, 9, 14])
    assert [s.shard_shape((4, 14), d) for d in range(4)] == [(4, 2), (4, 3), (4, 4), (4, 5)]


def test_uneven_rule_trailing_shards_get_extra():
    assert split_sizes(10, 4) == (2, 2, 3, 3)
    assert split_sizes(3, 4) == (0, 1, 1, 1)
    assert split_offsets(7, 3) == (0, 2, 4, 7)
    s = Sharding(AbstractMesh((4,)), [[0]])
    assert [s.shard_shape((10,), d) for d in range(4)] == [(2,), (2,), (3,), (3,)]


def test_uneven_rule_uses_combined_index_of_several_axes():
    # dim 0 split on axes [1, 0] of a 2x3 mesh: 6 shards, shard index = c1 * 2 + c0
    m = AbstractMesh((2, 3))
    s = Sharding(m, [[1, 0]])
    sizes = split_sizes(15, 6)
    for dev in range(6):
        c0, c1 = m.multi_index(dev)
        assert s.shard_shape((15,), dev) == (sizes[c1 * 2 + c0],)


def test_local_shape_adds_halos_on_every_sharded_dim():
    m = AbstractMesh((2, 3), ("x", "y"))
    s = Sharding(m, [["y"], [], ["x"]], halo_sizes=[1, 1, 0, 2])
    assert s.split_axes == ((1,), (), (0,))
    assert s.sharded_dims == (0, 2)
    assert s.halo_widths(0) == (1, 1) and s.halo_widths(1) == (0, 0) and s.halo_widths(2) == (0, 2)
    for dev in range(6):
        owned = s.shard_shape((9, 4, 6), dev)
        assert s.local_shape((9, 4, 6), dev) == (owned[0] + 2, owned[1], owned[2] + 2)


def test_halos_and_offsets_together():
    s = Sharding(AbstractMesh((3,)), [[0]], halo_sizes=[1, 2], sharded_dims_offsets=[0, 3, 5, 10])
    assert [s.local_shape((10, 2), d) for d in range(3)] == [(6, 2), (5, 2), (8, 2)]
    assert str(s) == "shard.sharding @mesh split_axes = [[0]] halo_sizes = [1, 2] sharded_dims_offsets = [0, 3, 5, 10]"
    assert Sharding.parse(str(s), s.mesh) == s


def test_normalization_and_hash():
    m = AbstractMesh((2, 2), ("x", "y"))
    a = Sharding(m, [["x"], [], []])
    b = Sharding(m, [[0]], halo_sizes=[0, 0])
    c = Sharding(m, [0], partial_axes=[], partial_type="max")
    assert a == b == c and len({a, b, c}) == 1
    assert Sharding(m, [[0], [1]]) != Sharding(m, [[1], [0]])
    assert Sharding(m, [], partial_axes=[1, 0]).partial_axes == (0, 1)
    assert Sharding(m, [[]]).is_replicated and not Sharding(m, [[0]]).is_replicated
    assert Sharding(m, [], partial_axes=["y"], partial_type="min").is_partial
    with pytest.raises(AttributeError):
        a.split_axes = ()
    assert a.replace(halo_sizes=[1, 1]).halo_sizes == (1, 1)


@pytest.mark.parametrize(
    "text, split, partial, kind, halos, offsets",
    [
        ("mesh.sharding @mesh0 split_axes = [[0]] : !mesh.sharding", ((0,),), (), "sum", (), ()),
        ("%3 = mesh.sharding @mesh1 split_axes = [[], [0]] : !mesh.sharding", ((), (0,)), (), "sum", (), ()),
        ("%5 = mesh.sharding @mesh3 split_axes = [[0]] partial = max[1] : !mesh.sharding", ((0,),), (1,), "max", (), ()),
        ("shard.sharding @g split_axes = [[1, 0]] halo_sizes = [1, 2]", ((1, 0),), (), "sum", (1, 2), ()),
        ("shard.sharding @g split_axes = [[0], [1]] sharded_dims_offsets = [0, 24, 32, 0, 20, 32]",
         ((0,), (1,)), (), "sum", (), (0, 24, 32, 0, 20, 32)),
        ("#mesh.shard<@mesh0, [[0]], partial = sum[1]>", ((0,),), (1,), "sum", (), ()),
        ("shard.sharding @g split_axes = [[]]", (), (), "sum", (), ()),
        ('#sdy.sharding<@mesh, [{"x"}, {}]>', ((0,),), (), "sum", (), ()),
        ('#sdy.sharding<@mesh, [{}, {"y", "x"}], replicated={"z"}>', ((), (1, 0)), (), "sum", (), ()),
        ('#sdy.sharding<@mesh, [{"x", ?}, {?}p1], unreduced={"z"}>', ((0,),), (2,), "sum", (), ()),
        ('<@mesh, [{"y"}, {"x"}]>', ((1,), (0,)), (), "sum", (), ()),
    ],
)
def test_parse_forms(text, split, partial, kind, halos, offsets):
    m = AbstractMesh((2, 2, 2), ("x", "y", "z"))
    s = Sharding.parse(text, m)
    assert (s.split_axes, s.partial_axes, s.partial_type, s.halo_sizes, s.sharded_dims_offsets) == (
        split, partial, kind, halos, offsets)
    assert Sharding.parse(str(s), m) == s


def test_sdy_sub_axes_split_the_mesh_axis():
    m = AbstractMesh((8, 2), ("x", "y"))
    s = Sharding.parse('#sdy.sharding<@mesh, [{"x":(1)2}, {"y", "x":(2)4}]>', m)
    assert s.mesh.shape == (2, 4, 2) and s.mesh.axis_names == ("x:(1)2", "x:(2)4", "y")
    assert s.split_axes == ((0,), (2, 1))
    # device d keeps its linear index: x = d // 2 splits as (x // 4, x % 4)
    for d in range(16):
        x, y = m.multi_index(d)
        assert s.shard_slices((8, 16), d) == (slice(4 * (x // 4), 4 * (x // 4) + 4),
                                               slice(2 * (y * 4 + x % 4), 2 * (y * 4 + x % 4) + 2))
    whole = Sharding.parse('#sdy.sharding<@mesh, [{"x"}]>', m)
    assert whole.mesh == m and whole.shard_shape((16,), 15) == (2,)
    minor = Sharding.parse('#sdy.sharding<@mesh, [{"x":(2)4}], replicated={"x":(1)2}>', m)
    assert minor.shard_shape((16,), m.linear_index((5, 0))) == (4,)
    assert minor.shard_slices((16,), m.linear_index((5, 0))) == (slice(4, 8),)


def test_visualize_2d_with_halos_and_partial():
    m = AbstractMesh((2, 2))
    pic = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 1, 1]).visualize((8, 6))
    assert "dev 0" in pic and "[0:4, 3:6]" in pic and "dev 3" in pic and "halos dim 0: -1/+1" in pic
    lines = pic.splitlines()
    row = next(l for l in lines if "dev 0" in l)
    assert row.index("dev 0") < row.index("dev 1")
    pic = Sharding(m, [[0]], partial_axes=[1], partial_type="max").visualize((8,))
    assert "devs 0,1" in pic and "devs 2,3" in pic and "partial (max)" in pic
    pic3 = Sharding(m, [[0], [], [1]]).visualize((4, 4, 4))
    assert "[0:2, 0:4, 2:4]: dev 1" in pic3


ERROR_CASES = [
    (dict(split_axes=[[0], [0]]), r"split_axes: mesh axis 0 \('x'\) is used twice \(dims 0 and 1\)"),
    (dict(split_axes=[[0, 0]]), r"split_axes: mesh axis 0 \('x'\) is used twice"),
    (dict(split_axes=[[3]]), "split_axes: dim 0: mesh axis: 3 is out of range"),
    (dict(split_axes=[[-1]]), "split_axes: dim 0: mesh axis: -1 is out of range"),
    (dict(split_axes=[["w"]]), "split_axes: dim 0: mesh axis: unknown name 'w'"),
    (dict(split_axes=[[1.5]]), "split_axes: dim 0: mesh axis: 1.5 is neither"),
    (dict(split_axes=5), "split_axes: 5 is not a list"),
    (dict(split_axes=[[0]], partial_axes=[0]), "partial_axes: mesh axis 0 .* is also used to split"),
    (dict(split_axes=[], partial_axes=[4]), "partial_axes: mesh axis: 4 is out of range"),
    (dict(split_axes=[], partial_axes=[1, 1]), "partial_axes: mesh axis 1 appears twice"),
    (dict(split_axes=[], partial_axes=[1], partial_type="mean"), "partial_type: unknown reduction kind 'mean'"),
    (dict(split_axes=[], partial_axes=[1], partial_type="generic"), "partial_type: 'generic' is not allowed"),
    (dict(split_axes=[[0]], halo_sizes=[1]), r"halo_sizes: \[1\] has 1 entries; expected 2"),
    (dict(split_axes=[[0], [1]], halo_sizes=[1, 1]), "expected 4 .*2 sharded dims"),
    (dict(split_axes=[[0]], halo_sizes=[1, -1]), "halo_sizes: entry 1 is -1"),
    (dict(split_axes=[[0]], halo_sizes=[1, "a"]), "halo_sizes: 'a' is not an integer"),
    (dict(split_axes=[[0]], sharded_dims_offsets=[1, 3, 8]), "sharded dim 0 starts at 1, not 0"),
    (dict(split_axes=[[0]], sharded_dims_offsets=[0, 5, 3]), r"decrease \(5 then 3\)"),
    (dict(split_axes=[[0]], sharded_dims_offsets=[0, 8]), "has 2 entries; expected 3"),
    (dict(split_axes=[[0], [1]], sharded_dims_offsets=[0, 4, 8]), r"has 3 entries; expected 7 \(per sharded dim, shard count \+ 1: \[3, 4\]\)"),
    (dict(split_axes=[[0]], sharded_dims_offsets=5), "sharded_dims_offsets: 5 is not a list"),
]


@pytest.mark.parametrize("fields, match", ERROR_CASES)
def test_sharding_errors(fields, match):
    m = AbstractMesh((2, 3, 2), ("x", "y", "z"))
    with pytest.raises(ShardingError, match=match):
        Sharding(m, fields.pop("split_axes"), **fields)


SHAPE_ERROR_CASES = [
    (dict(split_axes=[[0], [1], [2]]), (8, 8), "splits 3 dims, but the tensor has only 2"),
    (dict(split_axes=[[0]], sharded_dims_offsets=[0, 3, 7]), (8,), "end at 7, but the tensor's dim 0 has size 8"),
    (dict(split_axes=[[1]], halo_sizes=[3, 0]), (6,), "dim 0 low halo 3 is wider than shard 0's width 2"),
    (dict(split_axes=[[1]], halo_sizes=[0, 2], sharded_dims_offsets=[0, 3, 4, 6]), (6,),
     "dim 0 high halo 2 is wider than shard 1's width 1"),
    (dict(split_axes=[[0]]), (4, -2), r"global_shape: \(4, -2\) has a negative size"),
    (dict(split_axes=[[0]]), "ab", "global_shape: 'a' is not an integer"),
]


@pytest.mark.parametrize("fields, shape, match", SHAPE_ERROR_CASES)
def test_sharding_shape_errors(fields, shape, match):
    m = AbstractMesh((2, 3, 2), ("x", "y", "z"))
    s = Sharding(m, fields.pop("split_axes"), **fields)
    with pytest.raises(ShardingError, match=match):
        s.shard_shape(shape, 0)


@pytest.mark.parametrize(
    "text, match",
    [
        ("shard.sharding @m split_axes = [[0], [1] halo_sizes", r"expected ',' but found 'halo_sizes' at column 42"),
        ("shard.sharding @m split_axes = [[0]", "but the text ended"),
        ("shard.sharding @m split_axes = [[0]] colour = [1]", "unknown sharding attribute 'colour' at column 38"),
        ("shard.sharding @m split_axes = [[0]] partial = avg[1]", "partial_type: unknown reduction kind 'avg'"),
        ("shard.sharding @m split_axes = [[0]] halo_sizes = [?, 1]", r"dynamic \('\?'\) sizes are not supported"),
        ("shard.sharding split_axes = [[0]]", "expected a sym but found 'split_axes'"),
        ("tensor.sharding @m split_axes = [[0]]", "expected 'shard.sharding'"),
        ("shard.sharding @m split_axes = [[0]] $", r"unexpected character '\$' at column 38"),
        ('#sdy.sharding<@mesh, [{"q"}]>', "unknown axis name 'q'"),
        ('#sdy.sharding<@mesh, [{"x":(2)2}]>', r'sub-axis "x":\(2\)2 does not divide axis'),
        ('#sdy.sharding<@mesh, [{"x"}], colour={"y"}>', "unknown Shardy sharding field 'colour'"),
        ('#sdy.sharding<@mesh, [{"x"} {"y"}]>', "expected ',' but found '{'"),
        ('#sdy.sharding<@mesh, [{"x"}, {"x"}]>', "split_axes: mesh axis 0 .* is used twice"),
    ],
)
def test_parse_errors_say_where(text, match):
    m = AbstractMesh((2, 3, 2), ("x", "y", "z"))
    with pytest.raises(ShardingError, match=match):
        Sharding.parse(text, m)


def test_sdy_needs_axis_names():
    with pytest.raises(ShardingError, match="has no axis_names"):
        Sharding.parse('#sdy.sharding<@mesh, [{"x"}]>', AbstractMesh((2,)))


def test_no_device_on_abstract_mesh():
    with pytest.raises(ShardingError, match="AbstractMesh has no 'this process'"):
        Sharding(AbstractMesh((2,)), [[0]]).shard_shape((4,))
    with pytest.raises(ShardingError, match="device: 5 is out of range"):
        Sharding(AbstractMesh((2,)), [[0]]).shard_shape((4,), 5)


# -- properties ----------------------------------------------------------------


@st.composite
def mesh_shape_sharding(draw):
    mshape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    mesh = AbstractMesh(mshape, tuple("xyz"[: len(mshape)]))
    ndim = draw(st.integers(1, 3))
    axes = list(draw(st.permutations(range(len(mshape)))))
    nsplit = draw(st.integers(0, len(axes)))
    split = [[] for _ in range(ndim)]
    for a in axes[:nsplit]:
        split[draw(st.integers(0, ndim - 1))].append(a)
    partial = axes[nsplit: nsplit + draw(st.integers(0, len(axes) - nsplit))]
    kind = draw(st.sampled_from(["sum", "max", "min", "product", "average", "bitwise_and", "bitwise_or", "bitwise_xor"]))
    shape = tuple(draw(st.integers(0, 9)) for _ in range(ndim))
    sharded = [d for d in range(ndim) if split[d]]
    offsets = None
    if sharded and draw(st.booleans()):
        offsets = []
        for d in sharded:
            n = int(np.prod([mshape[a] for a in split[d]]))
            cuts = sorted(draw(st.lists(st.integers(0, shape[d]), min_size=n - 1, max_size=n - 1)))
            offsets += [0, *cuts, shape[d]]
    halos = None
    if sharded and draw(st.booleans()):
        halos = [draw(st.integers(0, 2)) for _ in range(2 * len(sharded))]
    s = Sharding(mesh, split, partial_axes=partial, partial_type=kind, sharded_dims_offsets=offsets)
    if halos is not None:
        try:
            s.replace(halo_sizes=halos).check_shape(shape)
            s = s.replace(halo_sizes=halos)
        except ShardingError as e:
            assert "wider than shard" in str(e)
    return mesh, shape, s


@given(mesh_shape_sharding())
@settings(derandomize=True, max_examples=200, deadline=None)
def test_each_replica_group_tiles_the_array_exactly_once(case):
    mesh, shape, s = case
    split_axes = {a for axes in s.split_axes for a in axes}
    other = [a for a in range(mesh.ndim) if a not in split_axes]
    for fixed in itertools.product(*(range(mesh.shape[a]) for a in other)):
        count = np.zeros(shape, dtype=int)
        for dev in range(mesh.size):
            c = mesh.multi_index(dev)
            if all(c[a] == v for a, v in zip(other, fixed)):
                count[s.shard_slices(shape, dev)] += 1
                assert s.local_shape(shape, dev) == tuple(
                    n + sum(s.halo_widths(d)) for d, n in enumerate(s.shard_shape(shape, dev)))
        assert (count == 1).all()


@given(mesh_shape_sharding())
@settings(derandomize=True, max_examples=200, deadline=None)
def test_print_parse_roundtrip(case):
    mesh, _, s = case
    assert Sharding.parse(str(s), mesh) == s
    assert hash(Sharding.parse(str(s), mesh)) == hash(s)


def test_sdy_sharding_naming_another_mesh_is_refused():
    m = AbstractMesh((2, 4), ("x", "y"))  # named "mesh"
    with pytest.raises(ShardingError, match=r"names mesh '@other', but it is read against mesh '@mesh'"):
        Sharding.parse('#sdy.sharding<@other, [{"x"}]>', m)
    with pytest.raises(ShardingError, match=r"names mesh '@mesh', but it is read against mesh '@grid'"):
        Sharding.parse('#sdy.sharding<@mesh, [{"x":(1)2}]>', AbstractMesh((4,), ("x",), name="grid"))
    named = AbstractMesh((2, 4), ("x", "y"), name="other")
    assert Sharding.parse('#sdy.sharding<@other, [{"y":(2)2}]>', named).mesh.name == "other"


def test_sdy_sub_axis_covering_the_whole_axis_is_the_axis():
    m = AbstractMesh((2, 4), ("x", "y"))
    assert Sharding.parse('#sdy.sharding<@mesh, [{"y":(1)4}, {"x":(1)2}]>', m) == Sharding(m, [["y"], ["x"]])
    assert Sharding.parse('#sdy.sharding<@mesh, [{"y":(2)1}]>', m) == Sharding(m, [])
