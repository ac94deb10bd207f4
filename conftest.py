"""Repository-level collection policy: with ``--protocol`` or ``--target``, pytest in the
repository root runs exactly that protocol's black-box suite and nothing else."""
from pathlib import Path

_SUITES = Path(__file__).parent / "conformance" / "suites"


def pytest_ignore_collect(collection_path, config):
    proto = config.getoption("wirecheck_protocol", None)
    if not proto and not config.getoption("wirecheck_target", None):
        return None
    path = Path(collection_path)
    wanted = _SUITES / _suite_package(proto) if proto else _SUITES
    if path == wanted or wanted in path.parents or path in wanted.parents:
        return None
    return True


def _suite_package(proto: str) -> str:
    """The suite's package name: a protocol id may hold a hyphen ("rabbitmq-stream") that a
    package name cannot, so ask the registry."""
    from reference_impl.core import registry
    try:
        return registry.get(proto).suite.rsplit(".", 1)[-1]
    except KeyError:
        return proto
