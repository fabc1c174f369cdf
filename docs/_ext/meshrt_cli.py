"""The ``cli-help`` directive: the ``--help`` text of a ``meshrt`` command, rendered at build time.

In a MyST page::

    ```{cli-help} mlir partition
    ```

renders what ``meshrt mlir partition --help`` prints, so the CLI reference cannot drift from
meshrt/cli.py. The text comes from ``meshrt.cli.main`` in-process (no subprocess, no MPI launch):
argparse prints the help and exits before any command runs.
"""

import contextlib
import io
import os

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

HELP_WIDTH = "88"  # argparse wraps to $COLUMNS: fix it so the page does not depend on the terminal


def cli_help_text(words):
    """What ``meshrt WORDS --help`` prints, as one string.

    >>> cli_help_text(["info"]).splitlines()[0]
    'usage: meshrt info [-h] [--mesh MESH]'
    """
    from meshrt.cli import main

    out = io.StringIO()
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        with contextlib.redirect_stdout(out):
            try:
                main([*words, "--help"])
            except SystemExit as e:
                if e.code not in (0, None):
                    raise RuntimeError(f"meshrt {' '.join(words)} --help exited with {e.code}") from None
            else:
                raise RuntimeError(f"meshrt {' '.join(words)} --help did not exit: not a help request?")
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return out.getvalue()


class CliHelp(SphinxDirective):
    """``cli-help [SUBCOMMAND ...]``: a literal block with that command's ``--help``."""

    optional_arguments = 8
    has_content = False

    def run(self):
        words = list(self.arguments)
        try:
            text = cli_help_text(words)
        except Exception as e:  # a broken parser fails the build (-W) with the command named
            return [self.state.document.reporter.warning(
                f"cli-help: meshrt {' '.join(words)} --help failed: {e}", line=self.lineno)]
        prompt = " ".join(["$ meshrt", *words, "--help"])
        block = nodes.literal_block(text=f"{prompt}\n{text.rstrip()}")
        block["language"] = "text"
        return [block]


def setup(app):
    app.add_directive("cli-help", CliHelp)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
