"""The suites' state machines and the runner of their examples."""
