"""``meshrt.fft``: numpy's FFT functions on DistributedTensors (what ``np.fft.*`` dispatches to).

The same signatures as ``numpy.fft`` (``n``/``s``, ``axis``/``axes``, ``norm``, ``out``), plus two
keywords numpy's own functions cannot take: ``sharding=``, the layout wanted for the result (default:
the layout of the transform's last stage, which saves a data move), and ``workers=``, the threads of
the local transforms.  ``fftfreq``/``rfftfreq`` return numpy arrays, or with ``sharding=`` a
DistributedTensor.  An array API ``fft`` namespace can re-export these names as they are.

>>> import numpy as np
>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> mesh = Mesh((-1,), ("x",))
>>> t = DistributedTensor.from_global(np.ones((4, 4)), Sharding(mesh, [["x"]]))
>>> k = fftn(t, sharding=Sharding(mesh, [["x"]]))       # the result laid out like t
>>> k.sharding == t.sharding, float(k.gather()[0, 0].real)
(True, 16.0)
"""

from .tensor.fft import (
    explain_fft, fft, fft2, fftfreq, fftn, fftshift, hfft, ifft, ifft2, ifftn, ifftshift, ihfft, irfft, irfft2,
    irfftn, rfft, rfft2, rfftfreq, rfftn, workers,
)

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "fftshift", "ifftshift", "fftfreq", "rfftfreq", "explain_fft", "workers"]
