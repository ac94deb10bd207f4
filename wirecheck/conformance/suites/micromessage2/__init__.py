"""Micromessage2 black-box suite (micromessage2.md; readings in the README)."""
