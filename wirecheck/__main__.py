"""``python -m wirecheck``: the ``wirecheck`` command line."""
import sys

from wirecheck.cli import main

if __name__ == "__main__":
    sys.exit(main())
