"""Planted targets, real peers and helpers the tests share (run as scripts too)."""
