"""Micromessage2 black-box suite (micromessage2.md; readings in docs/protocols/micromessage2.md)."""
