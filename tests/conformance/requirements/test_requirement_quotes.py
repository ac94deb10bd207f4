"""Every requirement carries the words of its source (``Requirement.quote``).

The sources (../shared: the protocol documents, SPEC_NOTES) are not in the repository, so
tools/verify_quotes.py checks the quotes where they exist and locks each quote's digest in
quotes.lock; here the quotes are compared with the lock everywhere, and with the sources
where they exist. A level that differs from its quote's own word says why (``level_note``).
"""
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_SPEC = importlib.util.spec_from_file_location("verify_quotes", ROOT / "tools" / "verify_quotes.py")
vq = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(vq)

REQUIREMENTS = vq.requirements()                # [(protocol, Requirement)], five catalogues
RERUN = "run `python tools/verify_quotes.py --write` where ../shared is available"


def test_the_tool_reads_every_registered_catalogue():
    """A protocol registered later, or a document renamed, cannot slip past the quote check."""
    from wirecheck.reference_impl.core import registry
    registered = {spec.requirements.rpartition(".")[2]: f"specs/{spec.document}"
                  for spec in registry.all_protocols()}
    assert registered == vq.DOCUMENTS
    counts = {p: sum(1 for q, _ in REQUIREMENTS if q == p) for p in vq.DOCUMENTS}
    assert all(counts.values()), f"empty catalogues: {counts}"


def test_every_requirement_has_a_quote():
    missing = [r.id for _, r in REQUIREMENTS if not vq.normalize(r.quote)]
    assert not missing, f"requirements without a quote: {missing}"


def test_every_quote_is_the_one_verified():
    lock = vq.read_lock()
    locked = lock["requirements"]
    ids = {r.id for _, r in REQUIREMENTS}
    unverified = sorted(ids - set(locked))
    edited = sorted(r.id for _, r in REQUIREMENTS
                    if r.id in locked and locked[r.id]["quote_sha256"] != vq.quote_digest(r.quote))
    assert not unverified, f"quotes never verified: {unverified}; {RERUN}"
    assert not edited, f"quotes edited since they were verified: {edited}; {RERUN}"
    stale = sorted(set(locked) - ids)
    assert not stale, f"quotes.lock names requirements that no longer exist: {stale}; {RERUN}"
    # The file a quote was found in is one its source allows, and its digest is recorded.
    misplaced = sorted(r.id for p, r in REQUIREMENTS if locked[r.id]["source"] not in vq.source_files(p, r.source))
    assert not misplaced, f"quotes verified in the wrong file for their source: {misplaced}; {RERUN}"
    assert {entry["source"] for entry in locked.values()} <= set(lock["sources"])


@pytest.mark.skipif(not vq.specs_dir().is_dir(),
                    reason=f"no shared specs at {vq.specs_dir()} (WIRECHECK_SPECS_DIR): "
                           "quotes are checked against quotes.lock only")
def test_every_quote_is_verbatim_in_its_source():
    shared = vq.specs_dir()
    found, misses = vq.locate(shared)
    assert not misses, "quotes not found verbatim in their source:\n" + "\n".join(misses)
    assert len(found) == len(REQUIREMENTS)
    # A source file changed since the lock was written: the quotes still hold, record it.
    assert vq.lock_data(shared, found) == vq.read_lock(), f"quotes.lock is out of date; {RERUN}"


# The document's word, as the issue reads it: "must"/"must not"/"required"/"shall" -> MUST,
# "should" -> SHOULD, "may"/"can" (and neither of the others) -> MAY. Whole words only, so
# "AUTH_REQUIRED" or "RequiredExtensions" are not a "required".
_MUST = re.compile(r"\b(must|required|shall)\b", re.IGNORECASE)
_SHOULD = re.compile(r"\bshould\b", re.IGNORECASE)
_MAY = re.compile(r"\b(may|can)\b", re.IGNORECASE)


def word_conflict(level: str, quote: str) -> str:
    """The quote's word that the level contradicts ("" when none does)."""
    if (m := _MUST.search(quote)) and level != "MUST":
        return m.group(0)
    if (m := _SHOULD.search(quote)) and level != "SHOULD":
        return m.group(0)
    if (m := _MAY.search(quote)) and not _MUST.search(quote) and not _SHOULD.search(quote) and level != "MAY":
        return m.group(0)
    return ""


@pytest.mark.parametrize("level, quote, conflict", [
    ("MUST", "The sender MUST NOT send any more messages", ""),
    ("SHOULD", "it must send and ERROR frame", "must"),
    ("MUST", "a field which is required", ""),
    ("MUST", "Text comparison should be case sensitive.", "should"),
    ("MUST", "The RequiredExtensionsLength can be zero", "can"),
    ("MAY", "Client may send PUBLISH", ""),
    ("MUST", "ACKs can either be accumulate ... the sender must stop", ""),
    ("SHOULD", "emits beyond the document: AUTH_REQUIRED, NOT_AUTHORIZED", ""),
    ("MUST", "frame decoding fails and the connection is closed", ""),
])
def test_word_conflict_reads_whole_words(level, quote, conflict):
    assert word_conflict(level, quote) == conflict


def test_a_level_other_than_the_quote_s_word_says_why():
    document = [r for _, r in REQUIREMENTS if r.source == "document"]
    assert document
    offenders = [f"{r.id} ({r.level}, quote says {word_conflict(r.level, r.quote)!r}): {r.quote[:80]!r}"
                 for r in document if word_conflict(r.level, r.quote) and not r.level_note.strip()]
    assert not offenders, ("levels that differ from their quote's word with no level_note:\n"
                           + "\n".join(offenders))
