"""Resuming a job: `Checkpointer` saves named tensors and plain values every few steps, atomically,
and `resume` loads the last complete checkpoint at any process count and sharding.

    ck = Checkpointer("out/ckpt", every=100)
    state = ck.load({"u": sharding, "v": sharding})      # None: nothing saved yet, start afresh
    if state is None:
        u, v, first = initial(), initial(), 0
    else:
        u, v, first = state.tensors["u"], state.tensors["v"], state.step
        rng.bit_generator.state = state.values["rng"]
    for step in range(first, steps):
        ...
        ck.maybe_save(step + 1, {"u": u, "v": v}, time=t, rng=rng.bit_generator.state)

``meshrt run --restarts N`` starts a job again after a lost host (``MESHRT_RESTART=k`` in the
k-th restart, `restart_count`); the program above goes on from its last checkpoint, on the
hosts that are left.  A checkpoint is one `meshrt.io.save_state` directory: its manifest is
the commit point, so a job killed while saving leaves the previous checkpoint whole.  A time
series (`meshrt.io.open_series` with ``mode="a"``) continues the same store: writing the step
after the checkpoint's drops the steps the lost run wrote past it, so each step is there once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from ..runtime.restart import restart_count
from .npy import MANIFEST, CheckpointError, _agree, _comm_of, _root_decides, load_state, save_state

__all__ = ["Checkpointer", "Resumed", "resume", "restart_count"]

_STEP = "meshrt.step"  # the metadata key of the step; the values are under "values"


class Resumed(NamedTuple):
    """A loaded checkpoint, as `Checkpointer.load` returns it.

    Parameters
    ----------
    step : int
        The step it was saved at.
    tensors : dict
        Name to `DistributedTensor`, in the shardings asked for, halos filled.
    values : dict
        The plain values saved with it.

    Examples
    --------
    >>> r = Resumed(100, {}, {"time": 0.5})
    >>> r.step, r.values["time"]
    (100, 0.5)
    """

    step: int
    tensors: dict
    values: dict


def _plain(value, where: str):
    """``value`` as JSON takes it: numpy scalars become Python numbers; containers are walked."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.ndarray):
        raise CheckpointError(f"Checkpointer: value {where} is an array of shape {value.shape}; save arrays as "
                              "tensors, or pass value.tolist() for a small one")
    raise CheckpointError(f"Checkpointer: value {where} is {type(value).__name__} {value!r}; expected a number, "
                          "string, bool, None, or a list or dict of them")


class Checkpointer:
    """Checkpoints of named tensors and plain values in the directory ``path``, every ``every``
    steps (`maybe_save`), the last complete one loaded by `load`.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint directory (a `meshrt.io.save_state` state: ``manifest.json`` + ``.npy``).
    every : int
        `maybe_save` saves at the steps that are multiples of it.

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> tmp = tempfile.TemporaryDirectory()
    >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]], halo_sizes=[1, 1])
    >>> ck = Checkpointer(os.path.join(tmp.name, "ckpt"), every=10)
    >>> ck.load(s) is None                      # nothing saved yet
    True
    >>> u = DistributedTensor.from_global(np.arange(4.0), s)
    >>> ck.maybe_save(5, {"u": u}, time=0.5), ck.maybe_save(10, {"u": u}, time=1.0, rng=[1, 2])
    (False, True)
    >>> state = ck.load(s)
    >>> state.step, state.values, state.tensors["u"].gather()
    (10, {'time': 1.0, 'rng': [1, 2]}, array([0., 1., 2., 3.]))
    >>> tmp.cleanup()
    """

    def __init__(self, path, every: int = 1):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise CheckpointError(f"Checkpointer: every is {every!r}; expected a positive int (steps)")
        self.path = os.path.abspath(os.fspath(path))
        self.every = int(every)
        self.last_saved = None

    @property
    def restart(self) -> int:
        """``MESHRT_RESTART``: 0 in a first run, k in the k-th restart by ``meshrt run --restarts``."""
        return restart_count()

    def due(self, step) -> bool:
        """Whether `maybe_save` saves at ``step``: a multiple of ``every`` not saved yet."""
        return int(step) % self.every == 0 and self.last_saved != int(step)

    def save(self, step, tensors: Mapping, **values) -> None:
        """Save ``tensors`` (name to `DistributedTensor`) and ``values`` (JSON-able: numbers,
        strings, lists, dicts; numpy scalars are converted) as the checkpoint of ``step``,
        atomically (collective: every process calls it with the same names)."""
        problem, meta = None, None
        try:
            if isinstance(step, (bool, np.bool_)) or not isinstance(step, (int, np.integer)):
                raise CheckpointError(f"step is {step!r}; expected an int")
            meta = {_STEP: int(step), "values": {k: _plain(v, repr(k)) for k, v in values.items()}}
        except CheckpointError as e:
            problem = str(e).replace("Checkpointer: ", "")
        first = next(iter(tensors.values()), None) if isinstance(tensors, Mapping) else None
        sharding = getattr(first, "sharding", None) or (first[1] if isinstance(first, tuple) and len(first) > 1 else None)
        if sharding is not None:  # every process raises alike, though one alone passed a bad value
            _agree(_comm_of(sharding), problem, f"Checkpointer({self.path!r}).save")
        elif problem:
            raise CheckpointError(f"Checkpointer({self.path!r}).save: {problem}")
        save_state(self.path, tensors, meta)
        self.last_saved = int(step)

    def maybe_save(self, step, tensors: Mapping, **values) -> bool:
        """`save` if ``step`` is `due`; whether it saved."""
        if not self.due(step):
            return False
        self.save(step, tensors, **values)
        return True

    def load(self, shardings):
        """The last complete checkpoint as `Resumed` (tensors in ``shardings``: one `Sharding` for
        all, or name to Sharding), or None if none was saved (collective)."""
        from ..tensor import DistributedTensor

        if not self.exists(shardings):
            return None
        tensors, meta = load_state(self.path, shardings, factory=DistributedTensor.from_local)
        if _STEP not in meta:
            raise CheckpointError(f"Checkpointer({self.path!r}): the state there was not saved by a Checkpointer "
                                  f"(its metadata has no {_STEP!r})")
        for t in tensors.values():
            if t.sharding.halo_sizes:
                t.update_halo()
        self.last_saved = int(meta[_STEP])
        return Resumed(int(meta[_STEP]), tensors, dict(meta.get("values", {})))

    def exists(self, shardings) -> bool:
        """Whether a complete checkpoint is there (rank 0 looks; every process gets its answer)."""
        first = shardings if not isinstance(shardings, Mapping) else next(iter(shardings.values()), None)
        return bool(_root_decides(_comm_of(first), lambda: os.path.isfile(os.path.join(self.path, MANIFEST)),
                                  f"Checkpointer({self.path!r})"))


def resume(path, shardings):
    """The last complete checkpoint a `Checkpointer` saved at ``path``, or None (collective).

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint directory.
    shardings : Sharding or mapping
        One Sharding for every tensor, or name to Sharding.

    Returns
    -------
    Resumed or None
        None when no checkpoint was saved there.

    Examples
    --------
    >>> from meshrt import Mesh, Sharding
    >>> resume("no/such/dir", Sharding(Mesh((-1,)), [[0]])) is None
    True
    """
    return Checkpointer(path).load(shardings)
