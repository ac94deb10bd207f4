"""Verdicts, causes and every report format (JSON, HTML, the matrix)."""
