"""Black-box suites, one package per protocol; each test carries its requirement IDs."""
