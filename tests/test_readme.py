"""The README stays a front door: short, its commands those CI runs, its example runnable, its links live;
docs/performance.md gives every measured table the command that reproduces it."""

import os
import re
import subprocess
import sys

import pytest

from meshrt.launch import find_mpiexec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
PERFORMANCE = os.path.join(ROOT, "docs", "performance.md")
MAX_README_LINES = 200

FIRST_COMMAND = 'pip install ".[mpich]" && meshrt run -n 4 examples/heat2d.py'
# A command named in a code span or block: what a reader types to reproduce a number.
COMMAND = re.compile(r"\b(mpiexec|meshrt|python|pytest)\b")
# [text](target) and ![alt](target); a target may carry a "#fragment" or a "title".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def code_blocks(text, language=None):
    """The fenced code blocks of Markdown ``text`` (of one ``language`` if given), in order.

    >>> code_blocks("a\\n```sh\\nls\\n```\\n```python\\nx = 1\\n```\\n", "python")
    ['x = 1']
    """
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.M | re.S)
    return [body.rstrip("\n") for lang, body in blocks if language is None or lang == language]


def ci_commands():
    """The commands .ci/run runs, one per line, comments and blank lines dropped."""
    lines = (line.split("  #")[0].strip() for line in read(os.path.join(ROOT, ".ci", "run")).splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def relative_links(path):
    """(line number, target) of every link in the Markdown file ``path`` that points into the repository."""
    links = []
    in_code = False
    for number, line in enumerate(read(path).splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^([a-z][a-z0-9+.-]*:|#)", target):
                links.append((number, target))
    return links


def sections(text):
    """(heading, lines) of each part of Markdown ``text`` that a heading starts (the first: before any)."""
    parts = [("(top)", [])]
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if not in_code and line.startswith("#"):
            parts.append((line.lstrip("#").strip(), []))
        else:
            parts[-1][1].append(line)
    return parts


def test_readme_is_short():
    lines = read(README).splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines (at most {MAX_README_LINES}): move reference text into docs/")


def test_readme_opens_with_the_two_commands_ci_runs():
    first = code_blocks(read(README))[0].splitlines()
    ci = ci_commands()
    install, test = 'pip install ".[mpich,test]"', "pytest"
    assert install in ci and test in ci[ci.index(install):], f".ci/run no longer runs {install!r} then {test!r}"
    assert any(re.search(r"meshrt\"? run -n 4 .*heat2d\.py", line) for line in ci), ".ci/run no longer runs heat2d"
    assert first == [FIRST_COMMAND, f"{install} && {test}"], (
        f"README.md's first code block must be exactly the two commands CI runs, found {first}")


@pytest.mark.parametrize("path", [README, PERFORMANCE], ids=["README.md", "docs/performance.md"])
def test_relative_links_point_to_files(path):
    links = relative_links(path)
    assert links, f"no links found in {path}: the link pattern is broken"
    missing = []
    for number, target in links:
        file_part = target.split("#")[0]
        if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), file_part))):
            missing.append(f"{os.path.relpath(path, ROOT)}:{number}: {target}")
    assert not missing, "links to files that do not exist:\n" + "\n".join(missing)


def test_every_measured_table_names_its_command():
    """Each table row sits in a section that names the command reproducing it, or names one itself."""
    unreproducible = []
    rows_seen = 0
    for heading, lines in sections(read(PERFORMANCE)):
        table = [line for line in lines if line.startswith("|") and not re.match(r"^\|[-| :]+\|$", line)]
        prose = "\n".join(line for line in lines if not line.startswith("|"))
        spans = re.findall(r"`([^`]+)`", prose) + code_blocks(prose)
        section_names_one = any(COMMAND.search(span) for span in spans)
        for row in table[1:]:  # table[0] is the header
            rows_seen += 1
            if not section_names_one and not any(COMMAND.search(span) for span in re.findall(r"`([^`]+)`", row)):
                unreproducible.append(f"{heading}: {row[:80]}")
    assert rows_seen >= 20, f"only {rows_seen} table rows found in docs/performance.md"
    assert not unreproducible, "table rows with no command to reproduce them:\n" + "\n".join(unreproducible)


def test_every_measured_table_says_when():
    """Each section with a table gives the date it was measured (a column or its text)."""
    undated = [heading for heading, lines in sections(read(PERFORMANCE))
               if any(line.startswith("|") for line in lines)
               and not re.search(r"\b20\d\d-\d\d-\d\d\b", "\n".join(lines))]
    assert not undated, f"sections of docs/performance.md with a table but no date: {undated}"


def test_readme_example_runs(tmp_path):
    """The README's Python example runs on 4 processes, and computes what it says."""
    if find_mpiexec() is None:
        pytest.skip("no mpiexec found")
    example = code_blocks(read(README), "python")[0]
    script = tmp_path / "readme_example.py"
    script.write_text(example + "\n\n"
                      "assert total == 2 * sum(range(64)) + 64, total\n"
                      "assert np.array_equal(np.asarray(whole(u)), np.arange(64.0).reshape(8, 8))\n"
                      "print('readme example: OK')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")}
    # Not run from the repository root: "python -m" there would import the uncompiled source tree.
    proc = subprocess.run([sys.executable, "-m", "meshrt.cli", "run", "-n", "4", str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("readme example: OK") == 4, proc.stdout
