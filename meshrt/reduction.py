"""Reduction kinds of the shard dialect, and `Generic` for user functions.

No MPI here: `Sharding` (partial_type) and the collectives both import it.

>>> ReductionKind("sum") is ReductionKind.sum
True
>>> ReductionKind.sum == "sum"
True
"""

from __future__ import annotations

import enum

from .errors import CollectiveError

__all__ = ["ReductionKind", "REDUCTION_KINDS", "Generic", "as_reduction"]


class ReductionKind(str, enum.Enum):
    """The shard dialect's reduction kinds.

    ``sum, max, min, product, average, bitwise_and, bitwise_or, bitwise_xor,
    generic``.  A `str` enum: each member equals its name, so every function
    taking a ``reduction`` (the collectives, `Sharding`'s ``partial_type``)
    accepts the member or the string.  ``generic`` needs the function itself:
    pass it as `Generic` (or the bare function).

    Parameters
    ----------
    value : str
        The kind's name.

    Raises
    ------
    ValueError
        ``ReductionKind(name)`` with an unknown name (the collectives raise
        `CollectiveError` for it instead, naming the known kinds).

    See Also
    --------
    Generic, all_reduce

    Notes
    -----
    ``average`` is a ``sum`` followed by division by the group size; on integer
    dtypes it is the floor of the mean.

    Examples
    --------
    >>> ReductionKind("max") is ReductionKind.max
    True
    >>> [k.value for k in ReductionKind][:4]
    ['sum', 'max', 'min', 'product']
    >>> str(ReductionKind.bitwise_xor)
    'bitwise_xor'
    """

    sum = "sum"
    max = "max"
    min = "min"
    product = "product"
    average = "average"
    bitwise_and = "bitwise_and"
    bitwise_or = "bitwise_or"
    bitwise_xor = "bitwise_xor"
    generic = "generic"

    def __str__(self):
        return self.value


REDUCTION_KINDS = tuple(k.value for k in ReductionKind)  # the spellings a sharding's partial_type accepts

class Generic:
    """A ``generic`` reduction: an elementwise ``fn(a, b) -> c`` run natively inside MPI.

    Pass it (or the bare function) as the ``reduction`` of a collective or as a
    `Sharding`'s ``partial_type``.  Two `Generic` are equal when they wrap the
    same function object with the same ``commute``.

    Parameters
    ----------
    fn : callable or numba.core.ccallback.CFunc
        The elementwise combiner: a plain Python function (compiled with
        Numba's ``njit``), a Numba dispatcher, or a Numba ``cfunc``.
    commute : bool, optional
        Whether ``fn`` is commutative (default True).  ``commute=False`` makes
        MPI combine in group order (``fn(x0, fn(x1, ...))`` order is kept, not
        its bracketing).

    Raises
    ------
    CollectiveError
        If ``fn`` is neither callable nor a Numba ``cfunc``.

    See Also
    --------
    ReductionKind, all_reduce

    Examples
    --------
    >>> g = Generic(lambda a, b: max(abs(a), abs(b)))
    >>> g.kind
    <ReductionKind.generic: 'generic'>
    >>> g.commute
    True
    """

    __slots__ = ("fn", "commute")
    kind = ReductionKind.generic

    def __init__(self, fn, commute: bool = True):
        if not callable(fn) and not hasattr(fn, "address"):
            raise CollectiveError(f"reduction: generic needs a function f(a, b) -> c, got {fn!r}")
        self.fn = fn
        self.commute = bool(commute)

    def __eq__(self, other):
        return isinstance(other, Generic) and self.fn is other.fn and self.commute == other.commute

    def __hash__(self):
        return hash((id(self.fn), self.commute))

    def __repr__(self):
        name = getattr(self.fn, "__name__", repr(self.fn))
        return f"Generic({name}, commute={self.commute})"


def as_reduction(reduction):
    """``ReductionKind`` or `Generic` from a kind name, a kind, a `Generic` or a function."""
    if isinstance(reduction, (ReductionKind, Generic)):
        return reduction
    if isinstance(reduction, str):
        try:
            kind = ReductionKind(reduction)
        except ValueError:
            kinds = ", ".join(k.value for k in ReductionKind)
            raise CollectiveError(f"reduction: unknown kind {reduction!r}; expected one of {kinds}") from None
        if kind is ReductionKind.generic:
            raise CollectiveError(
                "reduction: 'generic' needs the function itself: pass reduction=f or reduction=Generic(f)"
            )
        return kind
    if callable(reduction) or hasattr(reduction, "address"):
        return Generic(reduction)
    raise CollectiveError(f"reduction: {reduction!r} is neither a reduction kind nor a function")
