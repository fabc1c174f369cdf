"""The documentation site builds warning-free and documents every public name.

``sphinx-build -W --keep-going -b html docs <tmp>``: a warning (a broken cross-reference — the
build is nitpicky —, a docstring that is not valid RST, a page outside every toctree, a
``--help`` that fails) fails the build. Then the rendered site must hold a reference entry
for every name in ``meshrt.__all__`` and the ``--help`` of every ``meshrt`` subcommand.

Needs the ``docs`` extra (``pip install ".[docs]"``; the ``test`` extra pulls it in).
"""

import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sphinx", reason="docs extra not installed: pip install '.[docs]'")

from sphinx.util.inventory import InventoryFile  # noqa: E402

import meshrt  # noqa: E402
import meshrt.io.npy  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs"
BUILD_SECONDS = 60  # the budget .ci/run gives this test


def _readable(text: str) -> str:
    return text.strip() or "(no output)"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site once into a fresh directory; return (html dir, seconds it took)."""
    out = tmp_path_factory.mktemp("docs_html")
    warnings = out / "warnings.txt"
    # A subprocess: Sphinx imports meshrt (and so MPI) and registers docutils nodes globally;
    # none of that should leak into, or depend on, the pytest process.
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-w", str(warnings), str(DOCS), str(out / "html")]
    start = time.perf_counter()
    # cwd: not the repository root, whose unbuilt meshrt/ "-m" would put first on sys.path
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=out,
                          env={**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"})
    seconds = time.perf_counter() - start
    logged = warnings.read_text() if warnings.exists() else ""
    if proc.returncode != 0 or logged.strip():
        pytest.fail(f"sphinx-build -W failed (exit {proc.returncode}); fix each warning:\n"
                    f"{_readable(logged or proc.stderr)}\n--- stdout ---\n{_readable(proc.stdout)}",
                    pytrace=False)
    return out / "html", seconds


def test_site_builds_without_warnings_in_budget(site):
    _, seconds = site
    assert seconds < BUILD_SECONDS, f"the docs build took {seconds:.1f} s (budget {BUILD_SECONDS} s)"


def _inventory(html_dir: Path) -> dict:
    inv = InventoryFile.loads((html_dir / "objects.inv").read_bytes(), uri="")
    data = getattr(inv, "data", inv)  # Sphinx >= 8.2 wraps the mapping
    return {name: (role, item) for role, items in data.items() for name, item in items.items()}


def test_every_public_name_has_a_reference_entry(site):
    html_dir, _ = site
    documented = _inventory(html_dir)
    missing = [name for name in meshrt.__all__ if f"meshrt.{name}" not in documented]
    assert not missing, (
        f"names in meshrt.__all__ without an API reference entry: {missing}; add an "
        "autofunction/autoclass for each under docs/api/ (with `.. currentmodule:: meshrt`)")
    # meshrt.io's own public functions (save_state & co are documented as meshrt.*)
    missing_io = [name for name in meshrt.io.__all__
                  if f"meshrt.io.{name}" not in documented and f"meshrt.{name}" not in documented]
    assert not missing_io, f"names in meshrt.io.__all__ without an entry in docs/api/io.rst: {missing_io}"


def _entry_bodies(page: str):
    """{object id: the HTML of its description} for each top-level autodoc entry of a page."""
    bodies = {}
    for m in re.finditer(r'<dt class="sig[^"]*" id="([^"]+)">', page):
        start = m.end()
        # The entry's <dd> ends where the next entry of any level starts; nested members
        # (methods of a class) count as part of their class, which is what an example needs.
        nxt = re.compile(r'<dt class="sig[^"]*" id="').search(page, start)
        bodies[m.group(1)] = page[start:nxt.start() if nxt else len(page)]
    return bodies


def test_every_public_name_has_an_example(site):
    html_dir, _ = site
    documented = _inventory(html_dir)
    pages = {}
    without = []
    for name in meshrt.__all__:
        full = f"meshrt.{name}"
        if full not in documented:
            continue  # test_every_public_name_has_a_reference_entry reports it
        uri = documented[full][1].uri.split("#")[0]
        if uri not in pages:
            pages[uri] = _entry_bodies((html_dir / uri).read_text(encoding="utf-8"))
        body = html.unescape(pages[uri].get(full, ""))
        if ">>>" not in body and not re.search(r">\s*Examples?\s*<", body):
            without.append(name)
    assert not without, f"reference entries without an example (>>> or an Examples section): {without}"


def _help_words_from_text(words=()):
    """Each ``meshrt`` command line that has its own ``--help``, from the help text itself."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from meshrt_cli import cli_help_text
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    found = [tuple(words)]
    usage = cli_help_text(list(words)).split("\n\n", 1)[0]
    choices = re.search(r"\{([a-z_,-]+)\}", usage)
    for name in choices.group(1).split(",") if choices else ():
        found += _help_words_from_text((*words, name))
    return found


def test_cli_reference_renders_every_subcommand(site):
    html_dir, _ = site
    page = html.unescape((html_dir / "cli.html").read_text(encoding="utf-8"))
    page = re.sub(r"<[^>]+>", "", page)
    commands = _help_words_from_text() + [("bench", "stencil")]  # stencil has its own parser
    missing = [" ".join(("meshrt", *w)) for w in commands
               if f"$ {' '.join(('meshrt', *w, '--help'))}\nusage: meshrt" not in page]
    assert not missing, f"docs/cli.md lacks a cli-help block for: {missing}"
