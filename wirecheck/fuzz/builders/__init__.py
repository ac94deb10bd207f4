"""The seed corpora's builders (python -m wirecheck.fuzz.builders.<name>): each writes one folder
of fuzz/corpora/ from the reference codecs, the capture corpus or hand-made files,
deterministically, and nothing else (corpus_files.py)."""
