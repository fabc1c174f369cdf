"""The compiled build of a pure-Python module, where it was built from the source beside it.

setup.py compiles a few hot modules (``COMPILED_PY``: the per-operation bookkeeping of numpy
programs) with Cython; the build records the SHA-256 of the source it was made from. An edited
development tree whose build is older than its source gets the source, with a warning, never the
stale build.

>>> fresh("meshrt.errors").__name__   # a module that is not compiled: itself
'meshrt.errors'
"""

import hashlib
import importlib
import importlib.util
import os
import sys
import warnings

__all__ = ["fresh", "StaleBuildWarning"]


class StaleBuildWarning(UserWarning):
    """A compiled module's source changed since the build: the source runs (slower)."""


def fresh(name: str):
    """The module ``name``: its compiled build, or its source where the build is stale."""
    mod = importlib.import_module(name)
    built = getattr(mod, "_SOURCE_SHA256", None)
    path = getattr(mod, "__file__", None) or ""
    if built is None or path.endswith(".py"):
        return mod
    src = os.path.join(os.path.dirname(path), os.path.basename(path).split(".", 1)[0] + ".py")
    try:
        with open(src, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return mod  # (no source installed: the build is all there is)
    if digest == built:
        return mod
    warnings.warn(f"{name}: {src} changed since its compiled build; running the source (rebuild: "
                  f"pip install -e . or pip install .)", StaleBuildWarning, stacklevel=2)
    spec = importlib.util.spec_from_file_location(name, src)
    source = importlib.util.module_from_spec(spec)
    sys.modules[name] = source
    spec.loader.exec_module(source)
    parent, _, leaf = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], leaf, source)
    return source
