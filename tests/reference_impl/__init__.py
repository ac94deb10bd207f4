"""The reference implementations, rules shared across protocols."""
