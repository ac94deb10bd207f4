"""Every MUST names the party its sentence binds (``Requirement.binds``), and the server suites
grade the server on no sentence that binds only the client.

A document's "the client must ..." says nothing of what a server does with a client that
breaks it; where a suite grades the server on such a sentence, the catalogue entry is the
kit's reading of the server's part: SHOULD, binding the server (MM2-HS-015 beside the
client's MM2-HS-008; RMQS-HS-006).
"""
import re
from pathlib import Path

import pytest

from wirecheck.conformance.requirements import PARTIES, Requirement, catalogue, catalogue_data
from wirecheck.reference_impl.core import registry

from tests.conformance.requirements.test_requirement_coverage import suite_tests

SPECS = registry.all_protocols()

#: IDs whose sentence binds the client although a server suite grades the server on them:
#: the kit's reading of what the server does about a client that breaks the rule.
READ_FOR_THE_SERVER = {"micromessage2": {"MM2-HS-015"}, "rabbitmq-stream": {"RMQS-HS-006"}}

# A test that checks an ID under some profiles only adds the mark when it runs
# (``request.node.add_marker(pytest.mark.requirement(...))``), which suite_tests cannot see.
_ADDED = re.compile(r"add_marker\(\s*pytest\.mark\.requirement\(([^)]*)\)")
_ID = re.compile(r"[\"']([A-Z0-9]+(?:-[A-Z0-9]+)+)[\"']")


def server_suite_ids(spec) -> set[str]:
    """Every requirement ID a test of the protocol's server-facing suite is graded on."""
    ids = {i for _, marked in suite_tests(spec) for i in marked}
    folder = Path(__file__).resolve().parents[3] / spec.suite.replace(".", "/")
    for path in sorted(folder.glob("*.py")):
        for args in _ADDED.findall(path.read_text(encoding="utf-8")):
            ids.update(_ID.findall(args))
    return ids


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_every_must_names_its_party(spec):
    cat = catalogue(spec.requirements)
    musts = {i: r for i, r in cat.items() if r.level == "MUST"}
    assert musts, f"{spec.id}: no MUST in the catalogue"
    unnamed = sorted(i for i, r in musts.items() if r.binds not in ("server", "client", "both"))
    assert not unnamed, f"MUSTs that do not say whom they bind: {unnamed}"
    data = catalogue_data(cat)
    assert all(data[i]["binds"] == r.binds for i, r in cat.items())     # result files carry it


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_no_server_suite_grades_the_server_on_a_client_must(spec):
    cat = catalogue(spec.requirements)
    carried = server_suite_ids(spec)
    assert carried, f"{spec.id}: no requirement marks found in the suite"
    assert carried <= set(cat), sorted(carried - set(cat))             # the scan reads real IDs
    offenders = sorted(i for i in carried if cat[i].level == "MUST" and cat[i].binds == "client")
    assert not offenders, (f"{spec.id}: the server suite grades the server on MUSTs that bind the "
                           f"client (make each the kit's reading, SHOULD, binds='server'): {offenders}")


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_client_musts_are_for_the_client_checks(spec):
    """A MUST binding the client is judged where a client is: the server suite cannot see it."""
    cat = catalogue(spec.requirements)
    untested = sorted(i for i, r in cat.items() if r.level == "MUST" and r.binds == "client" and not r.untestable)
    assert not untested, f"client MUSTs without the reason a server suite cannot check them: {untested}"


@pytest.mark.parametrize("proto, rid", [(p, i) for p, ids in READ_FOR_THE_SERVER.items() for i in sorted(ids)])
def test_a_client_sentence_graded_on_the_server_is_the_kits_reading(proto, rid):
    spec = registry.get(proto)
    req = catalogue(spec.requirements)[rid]
    assert rid in server_suite_ids(spec), f"{rid} is no longer graded on the server: drop it from the list"
    assert (req.source, req.level, req.binds) == ("reading", "SHOULD", "server"), req
    assert re.search(r"\bclient\b", req.quote), "the quote is the document's sentence on the client"
    assert "client" in req.level_note and "the kit's reading" in req.level_note, req.level_note


def test_the_party_is_checked_when_a_requirement_is_made():
    base = dict(id="X-1", section="s", summary="x", quote="q")
    with pytest.raises(ValueError, match="names the party"):
        Requirement(level="MUST", **base)
    with pytest.raises(ValueError, match="binds"):
        Requirement(level="SHOULD", binds="broker", **base)
    assert Requirement(level="SHOULD", **base).binds == ""                 # below MUST: optional
    assert {p for p in PARTIES if p} == {"server", "client", "both"}
