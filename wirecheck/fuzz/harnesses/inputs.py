"""Shared bodies of the atheris targets over what the kit reads from its users besides captures
(harness_capture.py): a profile file (``--profile FILE.toml``: conformance/profiles.py), a
file given to ``wirecheck report`` (a result file, a fuzz campaign summary or a capture
analysis summary: conformance/report/results.py, then the HTML report and index.json made of it), a
network fuzzer's finding (its ``.json`` beside the ``.bin``, read by ``wirecheck replay``:
conformance/captures/replay.py) and a client driver's output (conformance/clients/driver.py).

Each reader has one documented way to refuse an input (ProfileError, ReportError) or none (a
finding's metadata that does not read is ignored, a driver's line that is not one of the
kit's is its own business); anything else propagates, and the fuzzer reports it as a crash.
What `wirecheck report` keeps of an input must make the HTML report and index.json.
"""
from __future__ import annotations

# imported here, not where used: the target's module imports this one inside atheris's
# instrumentation, and only what is imported then is instrumented
from wirecheck.conformance.captures import replay
from wirecheck.conformance.clients.driver import CRASH, ERROR, HANG, SUCCESS, DriverRun
from wirecheck.conformance.profiles import ProfileError, load_profile
from wirecheck.conformance.report.html import render
from wirecheck.conformance.report.index import index, load_for_report
from wirecheck.conformance.report.results import ReportError
from wirecheck.fuzz.harnesses.capture import scratch_path
from wirecheck.reference_impl.core import registry


def _write(name: str, data: bytes) -> str:
    path = scratch_path(name)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def profile_one_input(data: bytes) -> None:
    """``data`` as a profile file, for every protocol: a Profile whose base is a built-in one,
    or ProfileError."""
    path = _write("profile.toml", data)
    for spec in registry.all_protocols():
        try:
            profile = load_profile(spec, path)
        except ProfileError as exc:
            assert str(exc), "an empty ProfileError"
            continue
        assert profile.base in spec.profiles, (spec.id, profile.base)


def report_one_input(data: bytes) -> None:
    """``data`` as ``wirecheck report`` reads a file (report_index.load_for_report): refused
    with ReportError, or left out with one line, or kept; what is kept is made into the HTML
    report and index.json. (The loader checks the types the report reads to some depth; past
    it, the command shows each input once alone and leaves out what cannot be shown.)"""
    path = _write("result.json", data)
    unreadable: list[str] = []
    try:
        inputs = load_for_report([path], unreadable)
    except ReportError as exc:
        assert str(exc).startswith(path) and "\n" not in str(exc).strip(), str(exc)
        return
    assert len(inputs.runs + inputs.campaigns + inputs.analyses) == 1 and not unreadable
    page = render(inputs.runs, campaigns=inputs.campaigns, analyses=inputs.analyses, docs="")
    assert page.lstrip().startswith("<"), page[:80]
    index(inputs.runs, None, inputs.campaigns, inputs.analyses)


def finding_one_input(data: bytes) -> None:
    """``data`` as the metadata beside a network fuzzer's finding (``X.json`` for ``X.bin``):
    what ``wirecheck replay X.bin`` takes from it (the protocol and profile, the writes, the
    connections before) is well-formed or left aside."""
    finding = _write("finding.bin", b"\x00\x00\x00\x09\x07\x00\x00\x00\x01")
    _write("finding.json", data)
    meta = replay._finding_meta(finding)
    assert isinstance(meta, dict)
    writes = replay._finding_writes(finding, 9)
    assert sum(writes) == 9 and all(isinstance(w, int) and w > 0 for w in writes), writes
    spec, _profile = replay._finding_protocol(finding)
    assert spec is None or spec is registry.get(spec.id)
    try:
        before = replay.earlier_connection_bytes(finding)
    except ValueError as exc:                   # said in one line, nothing of it sent
        assert "earlier connection" in str(exc), exc
        return
    assert all(isinstance(b, bytes) and sum(w) == len(b) for b, w in before), before


def driver_output_one_input(data: bytes) -> None:
    """``data`` as what a client driver printed (on stdout; the second half on stderr), with
    each way it can end: the outcome and the lines the report shows are made of it."""
    half = len(data) // 2
    for returncode, hung in ((0, False), (1, False), (-6, False), (134, False), (None, True), (3, False)):
        run = DriverRun(["driver"], returncode=returncode, seconds=1.0, hung=hung)
        run.read_output(data[:half], data[half:])
        assert run.outcome in (SUCCESS, ERROR, CRASH, HANG), run.outcome
        assert run.describe() and "\n" not in run.describe().strip() or run.errors or run.hangs
        run.last_words()
        assert sum(run.received.values()) <= data.count(b"received")
