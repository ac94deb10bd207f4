"""Verdicts and what is made of them: the verdict names (verdicts.py), result files (results.py),
causes, and every report format (html.py, index.py, matrix.py, text.py, captures.py)."""
