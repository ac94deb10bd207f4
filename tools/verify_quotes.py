"""Check every requirement's quote against the text it cites: ``python tools/verify_quotes.py [--write]``.

Each :class:`Requirement` carries ``quote``, the words of its source copied verbatim. The
sources are the protocol documents and SPEC_NOTES under ``../shared``, which the repository
does not hold (nor does CI). So the check runs where they exist, and ``--write`` records what
it verified in ``wirecheck/conformance/requirements/quotes.lock``: per requirement, the
sha256 of its normalized quote and the file it was found in, plus the sha256 of each source
file. tests/conformance/requirements/test_requirement_quotes.py compares the quotes with the lock everywhere, and
repeats this check where ``../shared`` exists.

"Verbatim" allows one liberty: runs of whitespace (line breaks, indentation) collapse to one
space on both sides, since documents wrap lines and a quote is one Python string.

The shared directory is ``$WIRECHECK_SPECS_DIR``, by default ``../shared`` next to the
repository. Exit status: 0 when every quote is found, 1 otherwise (nothing is written then).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCK = REPO / "wirecheck" / "conformance" / "requirements" / "quotes.lock"

# The catalogue modules can be imported from a bare checkout (they need nothing installed).
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from wirecheck.conformance.requirements import Requirement, catalogue

#: Catalogue module (under wirecheck.conformance.requirements) -> its protocol document,
#: relative to the shared directory (the registry's ``ProtocolSpec.document``; the test checks
#: they agree, the tool does not import the registry so that it runs without the kit's
#: dependencies).
DOCUMENTS = {
    "blipmq": "specs/blipmq-protocol.md",
    "vibemq": "specs/vibemq-protocol.rst",
    "micromessage2": "specs/micromessage2.md",
    "rabbitmq_stream": "specs/rabbitmq-stream-protocol.adoc",
    "signalr": "specs/signalr-hub-protocol.md",
}

#: Facts about real implementations. SignalR's real clients have a file of their own.
NOTES = {"signalr": ("SPEC_NOTES.md", "signalr-real-clients.md")}
_DEFAULT_NOTES = ("SPEC_NOTES.md",)


def source_files(protocol: str, source: str) -> tuple[str, ...]:
    """Files (relative to the shared directory) a requirement of ``source`` may quote.

    A "reading" quotes the sentence it starts from: in the document, or the fact about real
    implementations it reads further (SPEC_NOTES)."""
    if source == "SPEC_NOTES":
        return NOTES.get(protocol, _DEFAULT_NOTES)
    if source == "reading":
        return (DOCUMENTS[protocol], *NOTES.get(protocol, _DEFAULT_NOTES))
    return (DOCUMENTS[protocol],)


def normalize(text: str) -> str:
    """Runs of whitespace -> one space, ends stripped: the only liberty a quote may take."""
    return " ".join(text.split())


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def quote_digest(quote: str) -> str:
    return sha256(normalize(quote).encode("utf-8"))


def requirements() -> list[tuple[str, Requirement]]:
    """(protocol, requirement) for every requirement of the five catalogues, in order."""
    return [(protocol, req)
            for protocol in DOCUMENTS
            for req in catalogue(f"wirecheck.conformance.requirements.{protocol}").values()]


def specs_dir() -> Path:
    return Path(os.environ.get("WIRECHECK_SPECS_DIR") or REPO.parent / "shared")


def locate(shared: Path) -> tuple[dict[str, str], list[str]]:
    """Find each quote in its source files: (id -> file it was found in, one line per miss)."""
    texts: dict[str, str] = {}

    def text(name: str) -> str:
        if name not in texts:
            path = shared / name
            texts[name] = normalize(path.read_text(encoding="utf-8")) if path.is_file() else ""
        return texts[name]

    found: dict[str, str] = {}
    misses: list[str] = []
    for protocol, req in requirements():
        quote = normalize(req.quote)
        names = source_files(protocol, req.source)
        if not quote:
            misses.append(f"{req.id}: no quote")
            continue
        hit = next((name for name in names if quote in text(name)), None)
        if hit is None:
            misses.append(f"{req.id}: not in {' or '.join(names)}: {quote[:100]!r}")
        else:
            found[req.id] = hit
    return found, misses


def lock_data(shared: Path, found: dict[str, str]) -> dict:
    """What the lock records: each quote's digest and file, and each file's digest (so a
    changed document shows in the lock's diff)."""
    by_id = {req.id: req for _, req in requirements()}
    return {
        "requirements": {i: {"quote_sha256": quote_digest(by_id[i].quote), "source": name}
                         for i, name in sorted(found.items())},
        "sources": {name: sha256((shared / name).read_bytes()) for name in sorted(set(found.values()))},
    }


def read_lock(path: Path = LOCK) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {LOCK.relative_to(REPO)} when every quote is found")
    args = parser.parse_args(argv)
    shared = specs_dir()
    if not shared.is_dir():
        print(f"no shared specs directory at {shared} (set WIRECHECK_SPECS_DIR)", file=sys.stderr)
        return 2
    found, misses = locate(shared)
    for miss in misses:
        print(miss)
    print(f"{len(found)} quotes found, {len(misses)} missed ({shared})")
    if misses:
        return 1
    if args.write:
        LOCK.write_text(json.dumps(lock_data(shared, found), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {LOCK.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
