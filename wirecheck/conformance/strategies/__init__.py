"""Hypothesis strategies (one module per protocol), plain invariants, and state machines."""
