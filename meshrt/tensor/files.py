"""A `DistributedTensor`'s file methods: ``save``/``load`` (``.npy`` with MPI-IO), ``to_zarr``/``from_zarr``
and ``to_hdf5``/``from_hdf5``.

`_TensorFiles` is a base class of `DistributedTensor` (``tensor.py``) and holds only these methods; the
work is in ``io.py`` and, for Zarr and HDF5, in ``formats.py``, which sits above ``tensor.py`` and is
reached through `ABOVE` (see ``_tensor_dispatch.py``).
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (the examples use it)

from ..runtime import check as _check
from ..io import npy as _io
from ..sharding.spec import Sharding
from .dispatch import ABOVE

__all__ = []


class _TensorFiles:
    """The file methods of `DistributedTensor`; see its documentation (docs/api/io.rst)."""

    __slots__ = ()

    @_check.method("DistributedTensor.save")
    def save(self, path) -> None:
        """Write the global array to one standard ``.npy`` file with MPI-IO (collective).

        Each process writes its owned block (halos never); the file replaces
        ``path`` only once complete, so a crash never destroys the previous one.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.

        Raises
        ------
        CheckpointError
            On every process: a partial tensor, an unsavable dtype, or a failed
            write.

        See Also
        --------
        load, meshrt.io.write_npy, save_state

        Examples
        --------
        >>> import os, tempfile
        >>> from meshrt import Mesh, Sharding
        >>> tmp = tempfile.TemporaryDirectory()
        >>> t = DistributedTensor.from_global(np.arange(4.0), Sharding(Mesh((-1,)), [[0]]))
        >>> t.save(os.path.join(tmp.name, "u.npy"))
        >>> np.load(os.path.join(tmp.name, "u.npy"))
        array([0., 1., 2., 3.])
        >>> tmp.cleanup()
        """
        _io.save_tensor(path, self)

    @classmethod
    @_check.creation("load")
    def load(cls, path, sharding: Sharding, *, periodic=None) -> "DistributedTensor":
        """Read a ``.npy`` file (any writer, any process count) into ``sharding``.

        Halos are zero until `update_halo`.

        Parameters
        ----------
        path : str or os.PathLike
            The file to read.
        sharding : Sharding
            The layout to read it into, on a `Mesh`.
        periodic : bool or sequence of bool, optional
            Which dims wrap around in halo updates.

        Returns
        -------
        DistributedTensor
            The tensor, with the file's shape and dtype.

        Raises
        ------
        CheckpointError
            On every process: a missing, foreign or truncated file, a shape the
            sharding cannot hold, or a failed read.

        See Also
        --------
        save, meshrt.io.read_npy, load_state

        Examples
        --------
        >>> import os, tempfile
        >>> from meshrt import Mesh, Sharding
        >>> tmp = tempfile.TemporaryDirectory()
        >>> np.save(os.path.join(tmp.name, "u.npy"), np.arange(4.0))
        >>> DistributedTensor.load(os.path.join(tmp.name, "u.npy"), Sharding(Mesh((-1,)), [[0]])).gather()
        array([0., 1., 2., 3.])
        >>> tmp.cleanup()
        """
        return _io.load_tensor(
            path, sharding, factory=lambda local, s, shape: cls.from_local(local, s, shape, periodic=periodic))

    @_check.method("DistributedTensor.to_zarr")
    def to_zarr(self, path, chunks=None, name=None, **kwargs) -> None:
        """Write a Zarr v3 array, each process its own chunks (collective).

        See `meshrt.formats.to_zarr`.  Needs the ``zarr`` package (the ``io``
        extra).

        Parameters
        ----------
        path : str or os.PathLike
            The array, or with ``name`` a group holding array ``name`` (other
            arrays of the group are kept).
        chunks : int or sequence of int, optional
            One int per dim, or one for all; default the sharding's blocks.
        name : str, optional
            The array's name inside the group ``path``.
        **kwargs
            ``compressors=``, passed to zarr.

        Raises
        ------
        CheckpointError
            On every process: a partial tensor, bad chunks, or a failed write.
        ImportError
            zarr is not installed.

        See Also
        --------
        from_zarr, to_hdf5

        Examples
        --------
        >>> import os, tempfile
        >>> from meshrt import Mesh, Sharding
        >>> tmp = tempfile.TemporaryDirectory()
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
        >>> DistributedTensor.from_global(np.arange(4.0), s).to_zarr(os.path.join(tmp.name, "u.zarr"))
        >>> DistributedTensor.from_zarr(os.path.join(tmp.name, "u.zarr"), s).gather()
        array([0., 1., 2., 3.])
        >>> tmp.cleanup()
        """
        ABOVE.formats.to_zarr(self, path, chunks, name, **kwargs)

    @classmethod
    def from_zarr(cls, path, sharding, name=None) -> "DistributedTensor":
        """Read any Zarr array into ``sharding``, each process reading only its block.

        Any writer (meshrt, zarr, xarray).  Given a `Mesh` instead of a sharding,
        the sharding `to_zarr` saved is used on it.  Halos are zero.

        Parameters
        ----------
        path : str or os.PathLike
            The array, or the group holding array ``name``.
        sharding : Sharding or Mesh
            The layout to read into, or the mesh for the saved layout.
        name : str, optional
            The array's name inside the group ``path``.

        Returns
        -------
        DistributedTensor
            The tensor, with the array's shape and dtype (and saved ``periodic``).

        Raises
        ------
        CheckpointError
            On every process: a missing or foreign array, no saved sharding for a
            `Mesh`, a shape the sharding cannot hold, or a failed read.
        ImportError
            zarr is not installed.

        See Also
        --------
        to_zarr, from_hdf5

        Examples
        --------
        >>> import os, tempfile
        >>> from meshrt import Mesh, Sharding
        >>> tmp = tempfile.TemporaryDirectory()
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
        >>> DistributedTensor.from_global(np.arange(4.0), s).to_zarr(os.path.join(tmp.name, "u.zarr"))
        >>> DistributedTensor.from_zarr(os.path.join(tmp.name, "u.zarr"), s.mesh).sharding == s
        True
        >>> tmp.cleanup()
        """
        return ABOVE.formats.from_zarr(path, sharding, name, factory=cls.from_local)

    @_check.method("DistributedTensor.to_hdf5")
    def to_hdf5(self, path, name, **kwargs) -> None:
        """Write dataset ``name`` of an HDF5 file (collective).

        Without MPI in h5py: per-process block files and a virtual dataset in
        ``path`` over them; with it (or ``parallel=True``): one collective write.
        Other datasets of ``path`` are kept; ``<stem>.xmf`` is rewritten for
        ParaView.  See `meshrt.formats.to_hdf5`.  Needs ``h5py`` (the ``io``
        extra).

        Parameters
        ----------
        path : str or os.PathLike
            The HDF5 file.
        name : str
            The dataset's name.
        **kwargs
            ``parallel=``: force (True) or refuse (False) the collective write.

        Raises
        ------
        CheckpointError
            On every process: a partial tensor, a bad name, ``parallel=True``
            without MPI in h5py, or a failed write.
        ImportError
            h5py is not installed.

        See Also
        --------
        from_hdf5, to_zarr

        Examples
        --------
        >>> import os, tempfile
        >>> from meshrt import Mesh, Sharding
        >>> tmp = tempfile.TemporaryDirectory()
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
        >>> DistributedTensor.from_global(np.arange(4.0), s).to_hdf5(os.path.join(tmp.name, "f.h5"), "u")
        >>> DistributedTensor.from_hdf5(os.path.join(tmp.name, "f.h5"), "u", s).gather()
        array([0., 1., 2., 3.])
        >>> tmp.cleanup()
        """
        ABOVE.formats.to_hdf5(self, path, name, **kwargs)

    @classmethod
    def from_hdf5(cls, path, name, sharding) -> "DistributedTensor":
        """Read any HDF5 dataset into ``sharding``, each process reading only its block.

        Virtual or not, any writer.  Given a `Mesh` for a file meshrt wrote, its
        saved sharding is used.  Halos are zero.

        Parameters
        ----------
        path : str or os.PathLike
            The HDF5 file.
        name : str
            The dataset's name.
        sharding : Sharding or Mesh
            The layout to read into, or the mesh for the saved layout.

        Returns
        -------
        DistributedTensor
            The tensor, with the dataset's shape and dtype.

        Raises
        ------
        CheckpointError
            On every process: a missing file or dataset, no saved sharding for a
            `Mesh`, a shape the sharding cannot hold, or a failed read.
        ImportError
            h5py is not installed.

        See Also
        --------
        to_hdf5, from_zarr

        Examples
        --------
        >>> import os, tempfile
        >>> from meshrt import Mesh, Sharding
        >>> tmp = tempfile.TemporaryDirectory()
        >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
        >>> DistributedTensor.from_global(np.arange(3), s).to_hdf5(os.path.join(tmp.name, "f.h5"), "u")
        >>> DistributedTensor.from_hdf5(os.path.join(tmp.name, "f.h5"), "u", s.mesh).gather()
        array([0, 1, 2])
        >>> tmp.cleanup()
        """
        return ABOVE.formats.from_hdf5(path, name, sharding, factory=cls.from_local)
