"""The standard's ``fft`` extension: meshrt's distributed FFTs (`meshrt.fft`) under the standard's names.

>>> import meshrt.array_api as xp
>>> float(xp.real(xp.fft.fft(xp.ones(4)))[0])
4.0
"""

from __future__ import annotations

import numpy as np

from .. import fft as _mfft
from ._device import from_numpy, sharding_for
from ._funcs import _call, _need_array

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


def _one(name):
    mine, ref = getattr(_mfft, name), getattr(np.fft, name)

    def f(x, /, *, n=None, axis=-1, norm="backward"):
        _need_array(name, x)
        return _call("fft." + name, lambda a: (mine if hasattr(a, "sharding") else ref)(a, n=n, axis=axis,
                                                                                       norm=norm), (x,))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The standard's ``fft.{name}`` (meshrt.fft.{name} on the tensor)."
    return f


def _many(name):
    mine, ref = getattr(_mfft, name), getattr(np.fft, name)

    def f(x, /, *, s=None, axes=None, norm="backward"):
        _need_array(name, x)
        return _call("fft." + name, lambda a: (mine if hasattr(a, "sharding") else ref)(a, s=s, axes=axes,
                                                                                       norm=norm), (x,))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The standard's ``fft.{name}`` (meshrt.fft.{name} on the tensor)."
    return f


fft, ifft, rfft, irfft, hfft, ihfft = (_one(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fftn, ifftn, rfftn, irfftn = (_many(n) for n in ("fftn", "ifftn", "rfftn", "irfftn"))


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """Sample frequencies of an ``n``-point FFT."""
    r = np.fft.fftfreq(n, d=d).astype(dtype or np.float64)
    return from_numpy(r, sharding_for(1, device))


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """Sample frequencies of an ``n``-point real FFT."""
    r = np.fft.rfftfreq(n, d=d).astype(dtype or np.float64)
    return from_numpy(r, sharding_for(1, device))


def fftshift(x, /, *, axes=None):
    """Zero frequency moved to the center."""
    _need_array("fftshift", x)
    return _call("fft.fftshift", lambda a: np.fft.fftshift(a, axes=axes), (x,))


def ifftshift(x, /, *, axes=None):
    """The inverse of `fftshift`."""
    _need_array("ifftshift", x)
    return _call("fft.ifftshift", lambda a: np.fft.ifftshift(a, axes=axes), (x,))
