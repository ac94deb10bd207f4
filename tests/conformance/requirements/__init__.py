"""The requirement catalogues: quotes, levels, which party, coverage by the suites."""
