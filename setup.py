"""Build the Cython extensions in csrc/ as meshrt.<name>.

Metadata lives in pyproject.toml; this file only adds the extensions and maps
the top-level kernels/ directory to the subpackage meshrt.kernels.
"""

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


def _extensions():
    exts = []
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
