"""The project's own checks: documentation, layering, the installed wheel, benchmarks."""
