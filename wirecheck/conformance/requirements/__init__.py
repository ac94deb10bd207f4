"""Requirement catalogues: one ID per normative statement of each protocol document.

Each protocol's module defines ``REQUIREMENTS``, a tuple of :class:`Requirement`. An ID with
no black-box test carries an ``untestable`` reason. The catalogue is the report's table of
contents; ``tests/conformance/requirements/test_requirement_coverage.py`` keeps it and the suites in step.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

LEVELS = ("MUST", "SHOULD", "MAY")
SOURCES = ("document", "SPEC_NOTES", "reading")
#: Who a requirement binds (Requirement.binds); "" is allowed below MUST only.
PARTIES = ("", "server", "client", "both")


@dataclass(frozen=True, slots=True)
class Requirement:
    id: str
    section: str
    level: str          # MUST / SHOULD / MAY (RFC 2119 reading of the document's wording)
    summary: str
    #: "document"; "SPEC_NOTES" for behaviour of the real peer; "reading" for what the kit reads
    #: into a document that is silent (e.g. that "stored" outlives a crash), graded SHOULD
    source: str = "document"
    untestable: str = ""       # why no black-box test can check it (then tested elsewhere)
    #: the words of the source the requirement comes from, verbatim (whitespace may differ):
    #: the document's sentence ("document", and the sentence a "reading" starts from) or the
    #: SPEC_NOTES fact. tools/verify_quotes.py finds it in ../shared and locks its digest in
    #: quotes.lock, which tests/conformance/requirements/test_requirement_quotes.py checks where ../shared is absent.
    quote: str = ""
    #: why the level differs from the quote's own word ("must"/"should"/"may"), when it does;
    #: "DISAGREES: ..." marks a level the catalogue keeps but the quote does not support.
    level_note: str = ""
    #: the party whose behaviour the quoted sentence prescribes: "server", "client", or "both"
    #: (either peer, or every sender: a frame layout both sides write, a rule for whichever
    #: side is the Caller or the pusher). Every MUST names it. A document's "the client must"
    #: is not the server's MUST: where the kit grades the server on such a sentence (what the
    #: server does about a client that breaks it), the entry is the kit's reading, a SHOULD
    #: binding the server; tests/conformance/requirements/test_requirement_party.py keeps the server suites to that.
    binds: str = ""

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"{self.id}: level {self.level!r} not in {LEVELS}")
        if self.source not in SOURCES:
            raise ValueError(f"{self.id}: source {self.source!r} not in {SOURCES}")
        if self.source == "reading" and self.level == "MUST":
            raise ValueError(f"{self.id}: the kit's own reading is never a MUST")
        if self.binds not in PARTIES:
            raise ValueError(f"{self.id}: binds {self.binds!r} not in {PARTIES}")
        if self.level == "MUST" and not self.binds:
            raise ValueError(f"{self.id}: a MUST names the party it binds (binds=)")


def catalogue(protocol_module: str) -> dict[str, Requirement]:
    """ID -> Requirement for a protocol's catalogue module."""
    reqs = importlib.import_module(protocol_module).REQUIREMENTS
    out: dict[str, Requirement] = {}
    for req in reqs:
        if req.id in out:
            raise ValueError(f"duplicate requirement id {req.id}")
        out[req.id] = req
    return out


def catalogue_data(cat: dict[str, Requirement]) -> dict[str, dict]:
    """A catalogue as plain data (result files carry it, so a report reads them without the
    kit version that wrote them)."""
    return {i: {"level": r.level, "section": r.section, "summary": r.summary, "untestable": r.untestable,
                "source": r.source, "quote": r.quote, "level_note": r.level_note, "binds": r.binds}
            for i, r in cat.items()}
