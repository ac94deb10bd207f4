"""The network fuzzer's findings (fuzz/live/fuzzer.py): one per root cause, its variants listed, saved
as ``<findings>/live-P/<kind>-<key hash>.bin`` (the bytes of the connection that fails) with a
``.json`` beside it; the connections it needs before that one as ``...-before-<i>.bin``, each
verified variant as ``...-variant-<i>.bin``.

``replayed`` says whether a freshly started target was given the connections again (never with
``--target``: the kit cannot restart what it did not start); ``reproduced`` of ``replays`` how
many such replays gave the finding back. A finding replayed that never came back is listed
apart (``not_reproduced``): a fact about the run, not about the target's input.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Verified variants kept per finding (their count goes on beyond).
MAX_VARIANTS = 8
#: Times a root cause that did not reproduce is tried again when it is met again.
ATTRIBUTION_TRIES = 3


@dataclass
class Finding:
    kind: str
    signature: str                      # the grouping key: one root cause, one signature
    reason: str
    connections: list                   # live_replay.Sent: the failing one last
    answers: list = field(default_factory=list)
    output: str = ""
    replayed: bool = False
    reproduced: int | None = None
    replays: int = 0
    trials: int = 0                     # fresh-target trials spent attributing it
    attempts: int = 0                   # attributions tried (one that did not reproduce is retried)
    tried: list = field(default_factory=list)   # a finding that did not reproduce: [connections, what came back]
    minimized_from: int | None = None
    replay_results: list = field(default_factory=list)  # what each confirming replay gave (its key, or "nothing")
    count: int = 1
    variants: list = field(default_factory=list)
    variant_keys: set = field(default_factory=set)
    file: str = ""

    @property
    def frames(self) -> list[bytes]:
        return list(self.connections[-1].frames)

    @property
    def writes(self) -> list[int]:
        return list(self.connections[-1].writes)

    @property
    def data(self) -> bytes:
        return b"".join(self.frames)

    @property
    def stands(self) -> bool:
        """Reproduced, or not replayable: a finding the exit status counts."""
        return self.reproduced is None or self.reproduced > 0

    def stem(self) -> str:
        return f"{self.kind}-{hashlib.sha1(self.signature.encode()).hexdigest()[:10]}"


def reproduce_command(fuzzer, finding: Finding, path: Path | str) -> str:
    """The one replay command: ``wirecheck replay`` sends the connections the finding needs
    before its own first (its JSON's ``connections_before``). A target the kit started from a
    command with ``{port}`` is started afresh by the replay (``--target-command``, as the
    finding was replayed here); another the kit started gets a new port each time, so the
    address is left for the user; else it is the target's."""
    import shlex
    o = fuzzer.options
    profile = f" --profile {shlex.quote(o.profile)}" if o.profile else ""
    managed = fuzzer.managed
    if managed is not None and any("{port}" in a for a in managed.argv) and not o.url:
        where = f"--target-command {shlex.quote(shlex.join(managed.argv))}"
    else:
        address = "HOST:PORT" if managed is not None else f"{fuzzer.host}:{fuzzer.port}"
        if o.url:                 # replay speaks raw TCP: the server's raw transport, if any
            address = "HOST:RAW-TCP-PORT"
        where = f"--target {address}"
    return f"wirecheck replay {shlex.quote(str(path))} --protocol {fuzzer.spec.id}{profile} {where}"


def _connection(sent) -> dict:
    return {"frames": [f.hex() for f in sent.frames], "writes": list(sent.writes), "mutation": sent.how}


def save(fuzzer, finding: Finding) -> None:
    folder = fuzzer.folder
    folder.mkdir(parents=True, exist_ok=True)
    stem = finding.stem()
    path = folder / f"{stem}.bin"
    path.write_bytes(finding.data)
    finding.file = str(path)
    for i, sent in enumerate(finding.connections[:-1]):
        (folder / f"{stem}-before-{i}.bin").write_bytes(sent.data)
    for i, variant in enumerate(finding.variants):
        if variant.get("bytes") is not None:
            (folder / f"{stem}-variant-{i}.bin").write_bytes(variant["bytes"])
            variant["file"] = str(folder / f"{stem}-variant-{i}.bin")
    last = finding.connections[-1]
    meta = {
        "protocol": fuzzer.spec.id, "profile": fuzzer.options.profile, "kind": finding.kind,
        "signature": finding.signature, "reason": finding.reason,
        "target": fuzzer.options.url or f"{fuzzer.host}:{fuzzer.port}",
        "found": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "after_cases": fuzzer.execs,
        "mutation": last.how, "changed_frame": last.changed,
        "frames": [f.hex() for f in finding.frames], "writes": finding.writes,
        "connections_before": [_connection(s) for s in finding.connections[:-1]],
        "replayed": finding.replayed, "reproduced": finding.reproduced, "replays": finding.replays,
        "replay_results": finding.replay_results, "trials": finding.trials, "count": finding.count,
        "variants": [{k: v for k, v in variant.items() if k != "bytes"} for variant in finding.variants],
        "minimized_from_frames": finding.minimized_from,
        "answers": [repr(a)[:300] for a in finding.answers],
        "target_output": finding.output,
        "reproduce": reproduce_command(fuzzer, finding, path),
    }
    from wirecheck.conformance.atomic_file import write_json
    write_json(path.with_suffix(".json"), meta)


def add_variant(finding: Finding, variant_key: str, sent, verified: bool, listed: bool = True) -> None:
    """One more input that reached ``finding``'s root cause, counted; listed if its shape is new,
    there is room and ``listed`` (with its bytes when ``verified``: a fresh target gave the
    finding back from it, after the connections the finding needs before its own)."""
    finding.count += 1
    for variant in finding.variants:
        if variant["shape"] == variant_key:
            variant["count"] += 1
            return
    if len(finding.variants) >= MAX_VARIANTS or not listed:
        return
    finding.variants.append({"shape": variant_key, "mutation": sent.how, "count": 1, "verified": verified,
                             "bytes": sent.data if verified else None})


def entry(fuzzer, finding: Finding) -> dict:
    """A finding in the run's summary."""
    return {"kind": finding.kind, "signature": finding.signature, "reason": finding.reason,
            "count": finding.count, "file": finding.file, "replayed": finding.replayed,
            "reproduced": finding.reproduced, "replays": finding.replays,
            **({"replay_results": finding.replay_results} if finding.replay_results else {}),
            **({"tried": [{"connections": n, "got": got or "nothing"} for n, got in finding.tried]}
               if finding.tried else {}),
            "connections": len(finding.connections), "frames": len(finding.frames), "bytes": len(finding.data),
            "variants": [{k: v for k, v in variant.items() if k != "bytes"} for variant in finding.variants],
            "reproduce": reproduce_command(fuzzer, finding, finding.file)}
