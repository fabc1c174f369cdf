"""The halo planner on AbstractMesh: hand-checked boxes and a pairing property."""

import itertools

import numpy as np
import pytest

from meshrt.errors import ShardingError
from meshrt.halo import plan_halo
from meshrt.mesh import AbstractMesh
from meshrt.sharding import Sharding

S = slice


def by_dir(plan):
    return {m.direction: m for m in plan.messages}


def test_1d_asymmetric_uneven():
    s = Sharding(AbstractMesh((4,)), [[0]], halo_sizes=[1, 2])  # widths 2, 2, 3, 3
    p = plan_halo(s, (10,), device=1)
    assert p.local_shape == (5,)
    m = by_dir(p)
    # down: the peer's high halo (2 wide) gets our two lowest owned cells
    assert (m[(-1,)].peer, m[(-1,)].send_box, m[(-1,)].recv_box) == (0, (S(1, 3),), (S(0, 1),))
    # up: the peer's low halo (1 wide) gets our highest owned cell
    assert (m[(1,)].peer, m[(1,)].send_box, m[(1,)].recv_box) == (2, (S(2, 3),), (S(3, 5),))
    assert m[(-1,)].send_tag == m[(1,)].recv_tag != m[(1,)].send_tag == m[(-1,)].recv_tag
    p0 = plan_halo(s, (10,), device=0)
    assert by_dir(p0)[(-1,)].peer is None and [x.peer for x in p0.sends] == [1]
    assert by_dir(plan_halo(s, (10,), periodic=True, device=0))[(-1,)].peer == 3


def test_offsets():
    s = Sharding(AbstractMesh((3,)), [[], [0]], halo_sizes=[1, 1], sharded_dims_offsets=[0, 2, 5, 9])
    p = plan_halo(s, (2, 9), device=1)
    assert p.local_shape == (2, 5)
    m = by_dir(p)
    assert m[(-1,)].send_box == (S(0, 2), S(1, 2)) and m[(-1,)].recv_box == (S(0, 2), S(0, 1))
    assert m[(1,)].send_box == (S(0, 2), S(3, 4)) and m[(1,)].recv_box == (S(0, 2), S(4, 5))


def test_2d_corners():
    s = Sharding(AbstractMesh((2, 2)), [[0], [1]], halo_sizes=[1, 1, 1, 1])
    p = plan_halo(s, (4, 6), device=0)  # owned rows 0:2, cols 0:3; local (4, 5)
    assert p.local_shape == (4, 5) and len(p.messages) == 8
    m = by_dir(p)
    assert (m[(1, 1)].peer, m[(1, 1)].send_box, m[(1, 1)].recv_box) == (3, (S(2, 3), S(3, 4)), (S(3, 4), S(4, 5)))
    assert (m[(1, 0)].peer, m[(1, 0)].send_box, m[(1, 0)].recv_box) == (2, (S(2, 3), S(1, 4)), (S(3, 4), S(1, 4)))
    assert all(m[d].peer is None for d in m if -1 in d)
    assert len(p.sends) == len(p.recvs) == 3
    # periodic in dim 1 only: the (0, -1) face and (1, -1) corner wrap, (-1, *) do not
    q = by_dir(plan_halo(s, (4, 6), periodic=[False, True], device=0))
    assert q[(0, -1)].peer == 1 and q[(1, -1)].peer == 3 and q[(-1, 1)].peer is None


def test_2d_asymmetric_zero_widths():
    s = Sharding(AbstractMesh((2, 2)), [[0], [1]], halo_sizes=[0, 2, 1, 0])
    p = plan_halo(s, (6, 6), device=3)  # owned rows 3:6 (w 3, lo 0), cols 3:6 (w 3, lo 1)
    assert p.local_shape == (5, 4)
    m = by_dir(p)
    # no low halo on dim 0: nothing received from below, but the peer below gets 2 rows
    assert not m[(-1, 0)].receives and m[(-1, 0)].sends
    assert m[(-1, 0)].send_box == (S(0, 2), S(1, 4))
    assert m[(0, -1)].recv_box == (S(0, 3), S(0, 1)) and not m[(0, -1)].sends
    assert m[(-1, -1)].peer == 0 and m[(-1, -1)].send_box == (S(0, 2), S(1, 1))
    assert not m[(-1, -1)].sends and not m[(-1, -1)].receives


def test_single_device_periodic_is_local():
    s = Sharding(AbstractMesh((1,)), [[0]], halo_sizes=[1, 2])
    p = plan_halo(s, (4, 3), periodic=True, device=0)
    assert not p.sends and not p.recvs and all(m.local for m in p.messages)
    assert p.local_copies == (((S(0, 1), S(0, 3)), (S(4, 5), S(0, 3))), ((S(5, 7), S(0, 3)), (S(1, 3), S(0, 3))))
    assert not any(m.peer is not None for m in plan_halo(s, (4, 3), device=0).messages)


def test_periodic_two_devices_same_peer_distinct_tags():
    s = Sharding(AbstractMesh((2,)), [[0]], halo_sizes=[1, 1])
    p = plan_halo(s, (4,), periodic=True, device=0)
    assert [m.peer for m in p.sends] == [1, 1]
    assert len({m.send_tag for m in p.sends}) == 2 and len({m.recv_tag for m in p.recvs}) == 2


def test_dim_on_two_axes_uses_linearized_neighbours():
    mesh = AbstractMesh((2, 3))
    s = Sharding(mesh, [[1, 0]], halo_sizes=[1, 1])
    for dev in range(6):
        m = by_dir(plan_halo(s, (12,), device=dev))
        down, up = mesh.neighbors([1, 0], mesh.multi_index(dev))
        assert (m[(-1,)].peer, m[(1,)].peer) == (None if down < 0 else down, None if up < 0 else up)


def test_3d_26_directions():
    s = Sharding(AbstractMesh((2, 2, 2)), [[0], [1], [2]], halo_sizes=[1] * 6)
    p = plan_halo(s, (4, 4, 4), periodic=True, device=0)
    assert len(p.messages) == 26 and len({m.send_tag for m in p.messages}) == 26
    corner = by_dir(p)[(1, 1, 1)]
    assert corner.peer == 7 and corner.send_box == (S(2, 3),) * 3 and corner.recv_box == (S(3, 4),) * 3


def test_no_halos_no_messages():
    s = Sharding(AbstractMesh((2,)), [[0]])
    assert plan_halo(s, (4,), device=0).messages == ()


def test_validation():
    s = Sharding(AbstractMesh((2,)), [[0]], halo_sizes=[2, 1], sharded_dims_offsets=[0, 3, 4])
    plan_halo(s, (4,), device=0)
    with pytest.raises(ShardingError, match="periodic neighbour"):
        plan_halo(s, (4,), periodic=True, device=0)
    with pytest.raises(ShardingError, match="periodic: .* 2 entries; the tensor has 1"):
        plan_halo(s, (4,), periodic=[True, False], device=0)
    with pytest.raises(ShardingError, match="device"):
        plan_halo(s, (4,))
    one = Sharding(AbstractMesh((1,)), [[0]], halo_sizes=[3, 0])
    with pytest.raises(ShardingError, match="wider than .*periodic"):
        plan_halo(one, (2,), periodic=True, device=0)


def _global_positions(s, shape, device, box, periodic):
    owned = s.shard_slices(shape, device)
    axes = []
    for d, b in enumerate(box):
        lo = s.halo_widths(d)[0]
        g = np.arange(b.start, b.stop) - lo + owned[d].start
        axes.append(g % shape[d] if periodic[d] else g)
    return [tuple(c) for c in itertools.product(*axes)]


@pytest.mark.parametrize("seed", range(30))
def test_send_boxes_land_on_matching_recv_boxes(seed):
    """For every message: the peer expects it (tag, size) and the cells sent are
    the global cells of the peer's halo box."""
    rng = np.random.default_rng(seed)
    mesh = AbstractMesh(tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(1, 4)))))
    tdim = int(rng.integers(1, 4))
    split = [[] for _ in range(tdim)]
    for a in range(mesh.ndim):
        t = int(rng.integers(-1, tdim))
        if t >= 0:
            split[t].append(a)
    sharded = [d for d in range(tdim) if split[d]]
    halos = [int(rng.integers(0, 3)) for _ in range(2 * len(sharded))]
    shape = []
    for d in range(tdim):
        n = int(np.prod([mesh.shape[a] for a in split[d]])) if split[d] else 1
        shape.append(n * int(rng.integers(2, 4)) + int(rng.integers(0, n)))
    s = Sharding(mesh, split, halo_sizes=halos)
    per = [bool(rng.integers(0, 2)) for _ in range(tdim)]
    shape = tuple(shape)
    plans = [plan_halo(s, shape, per, dev) for dev in range(mesh.size)]
    for dev, p in enumerate(plans):
        # (its lists, made from the boxes' widths, are its messages' own definitions)
        assert p.sends == tuple(m for m in p.messages if m.sends and not m.local)
        assert p.recvs == tuple(m for m in p.messages if m.receives and not m.local)
        for m in p.messages:
            if m.peer is None:
                continue
            back = by_dir(plans[m.peer])[tuple(-e for e in m.direction)]
            assert back.peer == dev and back.recv_tag == m.send_tag
            assert [x.stop - x.start for x in back.recv_box] == [x.stop - x.start for x in m.send_box]
            assert _global_positions(s, shape, dev, m.send_box, per) == \
                _global_positions(s, shape, m.peer, back.recv_box, per)


@pytest.mark.parametrize("mesh_shape, split, halos", [
    ((4,), [[0]], [1, 2]), ((2, 2), [[0], [1]], [0, 2, 1, 0]), ((1,), [[0]], [1, 2]),
    ((2, 3), [[1, 0]], [1, 1]), ((2, 2, 2), [[0], [1], [2]], [1, 0] * 3), ((3,), [[], [0]], [2, 1])])
def test_the_plans_own_lists_match_its_messages(mesh_shape, split, halos):
    """A plan comes with its sends, receives and local copies worked out as it is made (no dataclass
    ``__init__``, for a loop over new shapes): the same as the plan's own definitions from its messages,
    and the plan equals one made by the dataclass's constructor."""
    from meshrt.halo import HaloMessage, HaloPlan

    mesh = AbstractMesh(mesh_shape)
    s = Sharding(mesh, split, halo_sizes=halos)
    shape = tuple(12 + d for d in range(max(len(split), 1)))
    for periodic, dev in itertools.product([False, True], range(mesh.size)):
        p = plan_halo(s, shape, periodic=periodic, device=dev)
        assert p.sends == tuple(m for m in p.messages if m.sends and not m.local)
        assert p.recvs == tuple(m for m in p.messages if m.receives and not m.local)
        assert p.local_copies == HaloPlan.local_copies.func(p)
        again = HaloPlan(p.sharding, p.global_shape, p.device, p.local_shape, p.periodic,
                         tuple(HaloMessage(m.direction, m.peer, m.send_box, m.recv_box, m.send_tag, m.recv_tag,
                                           m.local) for m in p.messages))
        assert again == p


def test_new_global_shapes_with_alike_blocks_share_their_messages():
    """A halo plan's messages follow from the local shape alone: a tensor of a new global shape whose
    block here is like one seen reuses them (a loop over new shapes plans its halos once per block shape),
    and they are those planned afresh."""
    from meshrt import halo

    s = Sharding(AbstractMesh((2,)), [[0]], halo_sizes=[1, 2])
    a, b = plan_halo(s, (10,), device=0), plan_halo(s, (11,), device=0)  # blocks of 5 on device 0 in both
    assert a.global_shape == (10,) and b.global_shape == (11,) and a.local_shape == b.local_shape == (8,)
    assert a.messages is b.messages and a.sends is b.sends and a.recvs is b.recvs
    c = plan_halo(s, (11,), device=1)  # a block of 6 there: its own messages
    assert c.local_shape == (9,) and c.messages is not b.messages
    halo._MESSAGES.clear()
    halo._plan_cache.clear()
    assert plan_halo(s, (11,), device=0) == b and plan_halo(s, (11,), device=1) == c
