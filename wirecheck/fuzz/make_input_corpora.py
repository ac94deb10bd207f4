"""Deprecated name of ``python -m wirecheck.fuzz.builders.input_corpora`` (docs/deprecations.md)."""
from wirecheck.conformance.moved import run_moved

if __name__ == "__main__":
    run_moved(__spec__.name)
