"""Coverage-guided fuzzing (atheris): thin targets over shared helpers, corpora, dictionaries."""
