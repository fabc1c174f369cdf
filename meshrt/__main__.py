"""``python -m meshrt``: the ``meshrt`` command (``mpiexec -n 2 python -m meshrt bench all_reduce``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
