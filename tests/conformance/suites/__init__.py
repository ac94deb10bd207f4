"""The suites run as a user runs them, against reference brokers and planted targets."""
