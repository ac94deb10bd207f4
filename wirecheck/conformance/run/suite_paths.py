"""Which protocol's suite a test file belongs to: ``.../conformance/suites/<package>/...``
(the plugin, its lifecycle hooks and the reports ask)."""
from __future__ import annotations


def suite_protocol(path) -> str | None:
    parts = getattr(path, "parts", ())
    for i, part in enumerate(parts[:-1]):
        if part == "suites" and i > 0 and parts[i - 1] == "conformance":
            return _protocol_of_suite(parts[i + 1]) if i + 1 < len(parts) - 1 else None
    return None


def _protocol_of_suite(package: str) -> str:
    """A suite package is named like its protocol, but a protocol id may hold a hyphen
    ("rabbitmq-stream") that a Python package cannot: ask the registry."""
    from wirecheck.reference_impl.core import registry
    for spec in registry.all_protocols():
        if spec.suite.rsplit(".", 1)[-1] == package:
            return spec.id
    return package
