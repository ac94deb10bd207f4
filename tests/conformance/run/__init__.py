"""A run of the suites: crash culprits, signals, output paths."""
