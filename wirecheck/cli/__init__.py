"""The ``wirecheck`` command line: the entry point (:func:`main`, cli/main.py) and one module
per command. It sits on top of the layering: it imports the kit's other packages, and nothing
in them imports it (tests/project/test_import_layers.py)."""
from wirecheck.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
