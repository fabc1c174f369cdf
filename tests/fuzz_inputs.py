"""Mutation fuzzing of meshrt's readers of outside input (used by tests/test_fuzz_readers.py).

A case is a seed input (an MLIR file of the repository, a sharding string, a ``.npy`` file, a
manifest, a command line) and a few small mutations of it: characters or tokens (``f32``, ``@g``,
``[[0]]``) deleted, inserted, duplicated, replaced or swapped, whole lines deleted or duplicated.
A reader passes a case when it accepts the input or refuses it with its own error type and a
message that says where; anything else -- an ``AttributeError`` on a regular expression that did
not match, an ``IndexError``, a ``TypeError``, or the reader's own error type relabelling one of
those (``CheckpointError: ... KeyError: 'x'``) -- is an internal error.

`minimize` shrinks a failing input (lines, then characters) while the same internal error
(exception type and the line of meshrt that raised it) still comes out, so that a failure is
printed as a few characters rather than a whole file.

>>> mutate("abcdef", [("delete", 1, 2, "x"), ("insert", 0, 1, "@")])
'@adef'
"""

from __future__ import annotations

import re
import traceback

from hypothesis import strategies as st

# what the mutations insert: MLIR and sharding punctuation, digits, letters, a quote, space, and whole
# tokens (types, values, symbols, arrays) that keep a program readable but change what it means
ALPHABET = list('%@#^!"(){}[]<>,:=?-+*/x0129 \n.aefiz_$\\') + [
    "tensor<", "->", "::", "0x", "dense<", "{}", "[]", "f32", "i32", "index", "tensor<4xf32>", "tensor<?x2xi8>",
    "@g", "@grid", "%0", "%arg0", "[0]", "[[0]]", "[[], [0]]", "-1", "16", "?", "x", "4x", "\"y\"",
]
KINDS = ["delete", "insert", "duplicate", "replace", "swap", "delete_line", "duplicate_line"]


class Internal(AssertionError):
    """An input that made a reader fail with an internal exception."""


def mutations(max_count=4):
    """Hypothesis strategy: a list of ``(kind, position, length, text)`` edits."""
    edit = st.tuples(
        st.sampled_from(KINDS),
        st.integers(0, (1 << 32) - 1),
        st.integers(1, 12),
        st.sampled_from(ALPHABET),
    )
    return st.lists(edit, min_size=1, max_size=max_count)


def mutate(data, edits):
    """Apply ``edits`` to ``data`` (str or bytes), each at ``position`` modulo the current length."""
    is_bytes = isinstance(data, bytes)
    for kind, pos, n, text in edits:
        piece = text.encode() if is_bytes else text
        i = pos % (len(data) + 1)
        if kind == "delete":
            data = data[:i] + data[i + n:]
        elif kind == "insert":
            data = data[:i] + piece + data[i:]
        elif kind == "duplicate":
            data = data[:i + n] + data[i:i + n] + data[i + n:]
        elif kind == "replace":
            data = data[:i] + piece + data[i + len(piece):]
        elif kind in ("delete_line", "duplicate_line"):  # whole lines: the op at a line, n lines
            lines = data.splitlines(keepends=True)
            j = pos % (len(lines) + 1)
            span = lines[j:j + min(n, 3)]
            lines[j:j + len(span)] = span * 2 if kind == "duplicate_line" else []
            data = data[:0].join(lines)
        else:  # swap two neighbouring pieces of n characters
            data = data[:i] + data[i + n:i + 2 * n] + data[i:i + n] + data[i + 2 * n:]
    return data


# internal exception types named inside a reader's own message: an error relabelled, not explained
_RELABELLED = re.compile(
    r"\b(?!(MLIR|Sharding|Mesh|Checkpoint|Bench|Collective)Error\b)[A-Z]\w*(Error|Exception)\b|"
    r"\b(StopIteration|NoneType)\b"
)


def signature(exc):
    """``(type name, 'file:line' of the innermost meshrt frame)``: what identifies one bug (the
    original exception, where a last-resort wrapper raised another from it)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "meshrt" in f.filename]
    where = f"{frames[-1].filename.rsplit('meshrt', 1)[-1].lstrip('/')}:{frames[-1].lineno}" if frames else "?"
    return type(exc).__name__, where


def classify(reader, data, allowed, location=None, foreign=None):
    """Run ``reader(data)``; return ``"accepted"`` or the name of the allowed error it raised.

    ``allowed``: the reader's own exception types.  ``location``: a compiled pattern its message
    must match (``file:line:col:``, a field name).  ``foreign``: the words with which the reader
    quotes a library it delegates to (zarr's reading of its own metadata), whose exception names
    are then no relabelled internal errors.  Raises `Internal` for anything else.
    """
    try:
        reader(data)
    except allowed as e:
        msg = str(e)
        if _RELABELLED.search(msg) and not (foreign and foreign in msg):
            raise Internal(f"{type(e).__name__} relabels an internal error: {msg}") from e
        if location is not None and not location.search(msg):
            raise Internal(f"{type(e).__name__} without a location: {msg!r}") from e
        return type(e).__name__
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # noqa: BLE001 - what the fuzzing is looking for
        raise Internal(f"{type(e).__name__}: {e}") from e
    return "accepted"


def failure_of(reader, data, allowed, location=None):
    """The `signature` of the internal error ``data`` causes, or None when the reader holds."""
    try:
        classify(reader, data, allowed, location)
    except Internal as e:
        cause = e.__cause__ if e.__cause__ is not None else e
        return signature(cause) + (str(e).split(":", 1)[0],)
    return None


def minimize(reader, data, allowed, location=None, budget=4000):
    """A small input that still fails the same way (delta debugging over lines, then characters)."""
    want = failure_of(reader, data, allowed, location)
    if want is None or not isinstance(data, (str, bytes)):
        return data
    calls = [0]

    def fails(candidate):
        calls[0] += 1
        return failure_of(reader, candidate, allowed, location) == want

    for unit in ("line", "char"):
        if unit == "line":
            parts = data.splitlines(keepends=True)
        else:
            parts = [data[i:i + 1] for i in range(len(data))]
        empty = data[:0]
        n = 2
        while len(parts) >= 2 and calls[0] < budget:
            size = max(1, len(parts) // n)
            shrunk = False
            for start in range(0, len(parts), size):
                rest = parts[:start] + parts[start + size:]
                if rest and fails(empty.join(rest)):
                    parts, n, shrunk = rest, max(n - 1, 2), True
                    break
                if calls[0] >= budget:
                    break
            if not shrunk:
                if size == 1:
                    break
                n = min(len(parts), 2 * n)
        data = empty.join(parts)
    return data
