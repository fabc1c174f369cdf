"""Build the Cython extensions in csrc/ as meshrt.<name>, and compile the pure-Python modules of
`COMPILED_PY` with Cython too.

Metadata lives in pyproject.toml; this file only adds the extensions and maps
the top-level kernels/ directory to the subpackage meshrt.kernels.
"""

import hashlib
import os
import shutil

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = "csrc"
# Cython resolves `from meshrt._blockcopy cimport ...` by looking for
# meshrt/_blockcopy.pxd on its include path; the .pxd files live flat in
# csrc/, so mirror them into a package-shaped directory at build time.
PXD_ROOT = os.path.join("build", "pxd")


def _mirror_pxd():
    dst = os.path.join(HERE, PXD_ROOT, "meshrt")
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(os.path.join(HERE, CSRC)):
        if name.endswith(".pxd"):
            shutil.copyfile(os.path.join(HERE, CSRC, name), os.path.join(dst, name))
    return os.path.join(HERE, PXD_ROOT)


# Pure-Python modules on the per-operation path of numpy programs (issue 48: a deferred operation's
# bookkeeping is ~20% faster compiled). Each is compiled from a copy that records its source's
# SHA-256 (`_SOURCE_SHA256`), with the module's .pxd beside it where it has one (Cython's augmenting
# declarations: its classes as extension types); `meshrt._compiled.fresh` imports the source instead where
# the .py beside the build is not that source (a development tree edited since its last build).
COMPILED_PY = ("meshrt/tensor/lazy.py", "meshrt/tensor/fastpath.py", "meshrt/tensor/ufunc.py")
COMPILED_DIR = os.path.join("build", "compiled_py")


def _compiled_py():
    exts = []
    for path in COMPILED_PY:
        with open(os.path.join(HERE, path), "rb") as f:
            text = f.read()
        copy = os.path.join(COMPILED_DIR, path)
        os.makedirs(os.path.dirname(os.path.join(HERE, copy)), exist_ok=True)
        stamped = text + b"\n_SOURCE_SHA256 = \"" + hashlib.sha256(text).hexdigest().encode() + b"\"\n"
        old = None
        if os.path.exists(os.path.join(HERE, copy)):
            with open(os.path.join(HERE, copy), "rb") as f:
                old = f.read()
        if old != stamped:  # (rewritten only when changed: an unchanged module is not recompiled)
            with open(os.path.join(HERE, copy), "wb") as f:
                f.write(stamped)
        parts = path.split("/")[:-1]  # (the copy's folders are packages: Cython finds the .pxd by the module's name)
        for i in range(1, len(parts) + 1):
            init = os.path.join(HERE, COMPILED_DIR, *parts[:i], "__init__.py")
            if not os.path.exists(init):
                open(init, "w").close()
        pxd = path[:-3] + ".pxd"  # its augmenting declarations (extension types), beside the copy
        if os.path.exists(os.path.join(HERE, pxd)):
            shutil.copyfile(os.path.join(HERE, pxd), os.path.join(HERE, COMPILED_DIR, pxd))
        exts.append(Extension(path[:-3].replace("/", "."), [copy],
                              extra_compile_args=["-O2"] if os.name != "nt" else []))
    return exts


def _extensions():
    exts = _compiled_py()
    for name in sorted(os.listdir(os.path.join(HERE, CSRC))):
        if name.endswith(".pyx"):
            mod = name[:-4]
            exts.append(
                Extension(
                    f"meshrt.{mod}",
                    [f"{CSRC}/{name}"],
                    include_dirs=[np.get_include(), CSRC],
                    depends=[f"{CSRC}/_mpicall.h", f"{CSRC}/_mpicall.pxi", f"{CSRC}/_fusevm.h"],
                    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                    # _fusevm: no fused multiply-add (its results must equal numpy's bits)
                    extra_compile_args=(["-O3"] + (["-ffp-contract=off", "-Wno-psabi"] if mod == "_fusevm" else []))
                    if os.name != "nt" else [],
                )
            )
    return exts


setup(
    packages=["meshrt", "meshrt.kernels"] + [f"meshrt.{p}" for p in find_packages("meshrt")],
    package_dir={"meshrt": "meshrt", "meshrt.kernels": "kernels"},
    ext_modules=cythonize(
        _extensions(),
        include_path=[_mirror_pxd(), CSRC],
        compiler_directives={"language_level": "3"},
    ),
)
