"""The bodies of the atheris targets (the fuzz_*.py entry points beside this package are a few
lines over them, STYLE.md point 8): decoders whole and chunked, nested decoders, whole server
sessions, the transport and capture readers, the kit's own user inputs; what every target needs
to start (target_setup.py) and the untraced reference runs."""
