"""Sphinx configuration of meshrt's documentation site.

Build it (the ``docs`` extra installs what it needs; tests/test_docs_build.py runs the same)::

    pip install ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

Why Sphinx rather than mkdocs: the API reference comes from the docstrings through
autodoc + napoleon (numpy style, the convention of numpy, mpi4py and numba, whose users
are ours), its nitpicky mode fails the build on any reference that does not resolve,
doctest-style examples render as they run, and myst-parser reads the existing Markdown
pages unchanged. mkdocstrings would need a second docstring parser for the same result.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))

import meshrt  # noqa: E402  (the installed package: it carries the compiled extensions)

project = "meshrt"
author = "the meshrt developers"
copyright = "meshrt developers"
release = version = meshrt.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "meshrt_cli",  # docs/_ext/meshrt_cli.py: the ``cli-help`` directive
    "meshrt_xref",  # docs/_ext/meshrt_xref.py: ``ReshardPlan`` in a docstring links to meshrt.reshard.ReshardPlan
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# Every cross-reference must resolve: a broken one is a warning, and the build runs with -W.
nitpicky = True
# Names from outside meshrt that the docstrings and signatures mention. Intersphinx is off (the
# build has no internet), so these are accepted as plain text instead of links.
nitpick_ignore_regex = [
    ("py:.*", r"(numpy|np|numba|mpi4py|MPI|collections\.abc|typing|types|enum|os|pathlib|concurrent\.futures)\..*"),
    ("py:.*", r"(int|float|bool|str|bytes|tuple|list|dict|set|frozenset|object|type|callable|None|"
              r"Ellipsis|slice|range|complex|Exception|ValueError|TypeError|RuntimeError|"
              r"ImportError|OSError|KeyError|IndexError|NotImplementedError|TimeoutError)"),
    # The plain-English types of numpy-style docstrings ("sequence of int", "array_like").
    ("py:class", r"(sequence|iterable|mapping|scalar|array_like|array-like|path-like|file-like|"
                 r"callable|function|handle|ndarray|dtype|number|integer|index|path|name|pair)s?"),
    ("py:class", r"numpy (scalar|integer|array|bool)s?"),
    # napoleon splits "sequence of (Sharding or None)" at the spaces; the halves are not names.
    ("py:class", r"\(.*|.*\)"),
]
# Internal types that show up only as field annotations of the documented plan classes.
nitpick_ignore = [("py:class", "meshrt.linalg.matmul.Contraction")]

# -- MyST: the existing Markdown pages ------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # sharding.md#device-groups and friends resolve to the heading

# -- autodoc / napoleon -------------------------------------------------------------------------

autodoc_member_order = "bysource"
autodoc_typehints = "description"  # hints go into Parameters/Returns, signatures stay readable
autodoc_typehints_description_target = "documented"  # no half-filled Parameters lists of bare hints
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_preprocess_types = True

# -- HTML ------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"meshrt {release}"
html_static_path = []
