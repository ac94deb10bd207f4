"""Every suite test names requirement IDs; every ID is known; every ID has a test or an
``untestable`` reason (and not both)."""
import importlib
import inspect
import pkgutil

import pytest

from wirecheck.conformance.requirements import catalogue
from wirecheck.reference_impl.core import registry


def suite_tests(spec):
    """(test name, requirement IDs) of every test function/class in the protocol's suite."""
    package = importlib.import_module(spec.suite)
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{spec.suite}.{info.name}")
        for name, obj in vars(module).items():
            if not name.startswith("test") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            marks = getattr(obj, "pytestmark", [])
            ids = [i for m in marks if m.name == "requirement" for i in m.args]
            found.append((f"{info.name}::{name}", ids))
    return found


SPECS = registry.all_protocols()


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_every_suite_test_names_known_requirements(spec):
    cat = catalogue(spec.requirements)
    tests = suite_tests(spec)
    assert tests, f"{spec.id}: empty suite"
    unmarked = [name for name, ids in tests if not ids]
    assert not unmarked, f"tests without @pytest.mark.requirement: {unmarked}"
    unknown = {(name, i) for name, ids in tests for i in ids if i not in cat}
    assert not unknown, f"unknown requirement IDs: {sorted(unknown)}"
    wrong_prefix = [i for i in cat if not i.startswith(spec.requirement_prefix)]
    assert not wrong_prefix, wrong_prefix


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_every_requirement_has_a_test_or_a_reason(spec):
    cat = catalogue(spec.requirements)
    tested = {i for _, ids in suite_tests(spec) for i in ids}
    missing = [i for i, r in cat.items() if i not in tested and not r.untestable]
    assert not missing, f"requirements with neither a test nor an untestable reason: {missing}"
    contradictory = [i for i, r in cat.items() if i in tested and r.untestable]
    assert not contradictory, f"marked untestable but tested: {contradictory}"


@pytest.mark.parametrize("spec", registry.all_protocols(), ids=lambda s: s.id)
def test_every_profile_feature_is_consulted_by_the_suite(spec):
    """A [features] entry is a setting the kit reads (profiles.known_settings): one that no
    test of the suite consults would be accepted and change nothing."""
    from pathlib import Path

    from wirecheck.conformance.profiles import known_settings
    suite = Path(importlib.import_module(spec.suite).__file__).parent
    source = "\n".join(p.read_text() for p in suite.glob("*.py"))
    unread = [f for f in sorted(known_settings(spec)["features"]) if f'"{f}"' not in source]
    assert not unread, f"{spec.id}: features no test consults: {unread}"
