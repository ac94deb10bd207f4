"""Capture reading, decoding, recording and replay; the recorded corpora."""
