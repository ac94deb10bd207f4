"""The wirecheck pytest plugin (entry point ``pytest11``).

Options (group "wirecheck"): ``--target HOST:PORT``, ``--protocol P``, ``--profile NAME|FILE``,
``--timeout S`` (per receive; ``--wirecheck-timeout`` when another plugin owns ``--timeout``),
``--strict`` (pytest's own flag: SHOULD violations fail too), ``--wirecheck-report FILE``,
``--wirecheck-test-budget S`` (wall-clock seconds of I/O per test; conformance/target/connection.py Budget).

Without ``--target`` the ``target`` fixture starts the protocol's reference broker on a free
port in this process (per xdist worker). Verdicts: a failing test whose requirements are all
SHOULD/MAY is NON-STRICT (reported as xfail, "N" in the progress line) unless ``--strict``; a
failing test whose requirements the profile waives is WAIVED; otherwise FAIL. The transcript
of every connection a test opened is attached to any test that does not pass.
"""
from __future__ import annotations

import dataclasses

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

from wirecheck.conformance.report import causes

from wirecheck.conformance.run import lifecycle
from wirecheck.conformance.run.budgets import RUN_SLACK, default_budget, default_run_budget, longest_timer  # noqa: F401
from wirecheck.conformance.report.text import FAILURE_VERDICTS, crash_line, failure_lines
from wirecheck.conformance.report import verdicts
from wirecheck.conformance.run.suite_paths import _protocol_of_suite, suite_protocol  # noqa: F401
from wirecheck.conformance.target.connection import DEFAULT_MAX_TIMEOUTS, DEFAULT_TIMEOUT, Budget, RunAllowance, Target

_TARGET_KEY = pytest.StashKey[Target]()
_RUN_KEY = pytest.StashKey[object]()
_CASES_KEY = pytest.StashKey[tuple]()      # (suite tests, those that kill the target)
_ATTACHED_KEY = pytest.StashKey[int]()
_HTML_KEY = pytest.StashKey[str]()
# The lifecycle hooks (preflight, the target process, crashes) live in their own module;
# pytest finds hooks among this plugin module's names.
from wirecheck.conformance.run.lifecycle import (  # noqa: E402,F401
    pytest_cmdline_main, pytest_configure_node, pytest_runtest_protocol, pytest_runtest_setup, pytest_runtestloop,
    pytest_sessionfinish, pytest_unconfigure, target_process)
#: Characters of transcripts (text and wire data) the reports of one run attach, over all its
#: tests. Each test's transcript is bounded (target.TranscriptLimits), but a failing report is
#: kept until the run ends (pytest's terminal summary, the result collector's parsed copy, and
#: `wirecheck check` reads the result file back): a target that makes every test fail with a
#: long conversation would add those bounds up over hundreds of tests (the SignalR suite against
#: an endless stream of Pings once attached 2.3 MB per test: 480 MB by the last test, 830 MB
#: with the result file read back). Far more than a run against a sound target attaches; past
#: it, a failing test's report says its transcript was left out.
RUN_TRANSCRIPT_CHARS = 16 << 20


# -- options -----------------------------------------------------------------------------------

def _host_port(text: str) -> tuple:
    """``HOST:PORT`` -> (host, port); ``ws://HOST:PORT/path`` or ``http://HOST:PORT/path``
    (a protocol spoken over HTTP + WebSocket, such as SignalR) -> (host, port, url)."""
    if "://" in text:
        from urllib.parse import urlsplit
        parts = urlsplit(text)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme not in ("ws", "wss", "http", "https") or not parts.hostname:
            raise pytest.UsageError(f"--target {text!r}: expected HOST:PORT, ws://HOST:PORT/path "
                                    f"or http://HOST:PORT/path")
        if port is None:
            port = 443 if parts.scheme in ("wss", "https") else 80
        return parts.hostname, port, text
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise pytest.UsageError(f"--target {text!r}: expected HOST:PORT (or a ws:// / http:// URL)")
    return host.strip("[]"), int(port)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise pytest.UsageError(f"--timeout {text!r}: expected seconds") from None
    if value <= 0:
        raise pytest.UsageError("--timeout must be > 0")
    return value


def pytest_addoption(parser) -> None:
    group = parser.getgroup("wirecheck", "wirecheck conformance suite")
    group.addoption("--target", dest="wirecheck_target", type=_host_port, default=None,
                    metavar="HOST:PORT|URL",
                    help="implementation under test: HOST:PORT, or ws://HOST:PORT/path / "
                         "http://HOST:PORT/path for a protocol over WebSocket (default: start "
                         "the reference broker)")
    group.addoption("--protocol", dest="wirecheck_protocol", default=None, metavar="P",
                    help="run only this protocol's suite (see `wirecheck protocols`)")
    group.addoption("--profile", dest="wirecheck_profile", default=None, metavar="NAME|FILE",
                    help="target profile: built-in name or TOML file")
    timeout_help = "seconds to wait for each receive (default %(default)s)"
    try:
        group.addoption("--timeout", "--wirecheck-timeout", dest="wirecheck_timeout",
                        type=_positive_float, default=DEFAULT_TIMEOUT, metavar="S", help=timeout_help)
    except ValueError:            # another plugin (pytest-timeout) owns --timeout
        group.addoption("--wirecheck-timeout", dest="wirecheck_timeout", type=_positive_float,
                        default=DEFAULT_TIMEOUT, metavar="S", help=timeout_help)
    group.addoption("--wirecheck-report", dest="wirecheck_report", default=None, metavar="FILE",
                    help="FILE.json: a result file (verdict, requirements, transcript per test); FILE.html: the "
                         "HTML report, with FILE.json beside it")
    group.addoption("--wirecheck-label", dest="wirecheck_label", default=None, metavar="NAME",
                    help="the implementation's name in reports (default: the target and profile)")
    group.addoption("--wirecheck-run-budget", dest="wirecheck_run_budget", type=_positive_float,
                    default=None, metavar="S",
                    help="wall-clock seconds for the whole run's I/O; once spent, every test still "
                         "to run ends as TIMEOUT at its first I/O (default: the cases x timeout + "
                         f"{RUN_SLACK:g} s, plus 5 x the profile's longest timer)")
    lifecycle.add_options(group)
    group.addoption("--wirecheck-test-budget", dest="wirecheck_test_budget", type=_positive_float,
                    default=None, metavar="S",
                    help="wall-clock seconds of I/O per test, whatever the target does (default: "
                         "60 + 30 x timeout + 5 x the profile's longest timer); a test also stops "
                         f"after {DEFAULT_MAX_TIMEOUTS} receives time out")


def strict_mode(config) -> bool:
    """pytest's own ``--strict`` (pytest >= 9 stores it as the ``strict`` ini value)."""
    try:
        return bool(config.getini("strict"))
    except (ValueError, KeyError):
        return bool(getattr(config.option, "strict", False))


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "requirement(*ids): requirement IDs this black-box test checks")
    config.addinivalue_line("markers", "slow: waits for a protocol timer (keep-alive, timeouts)")
    if (config.getoption("wirecheck_target") or config.getoption("wirecheck_target_command")) \
            and not config.getoption("wirecheck_protocol"):
        raise pytest.UsageError("--target and --target-command need --protocol (see `wirecheck protocols`)")
    address = config.getoption("wirecheck_target")
    if address and not address[1] and not config.getoption("wirecheck_target_command") \
            and not getattr(config, "workerinput", None):
        raise pytest.UsageError("--target with port 0 needs --target-command (the kit picks the port)")
    proto = config.getoption("wirecheck_protocol")
    if proto and not getattr(config, "workerinput", None):
        from wirecheck.conformance.run.output_paths import check_outputs
        check_outputs(config)
    if proto:
        from wirecheck.conformance.run import signals as run_signals
        run_signals.install(config, lambda: lifecycle.stop_at_once(config))
    if proto:
        from wirecheck.reference_impl.core import registry
        from wirecheck.conformance.profiles import ProfileError, load_profile
        try:
            load_profile(registry.get(proto), config.getoption("wirecheck_profile"))
        except KeyError as exc:
            raise pytest.UsageError(str(exc.args[0])) from None
        except ProfileError as exc:
            raise pytest.UsageError(str(exc)) from None
        spec = registry.get(proto)
        timeout = config.getoption("wirecheck_timeout")
        lifecycle.start_watch(config, spec, config.getoption("wirecheck_test_budget") or default_budget(
            timeout, load_profile(spec, config.getoption("wirecheck_profile"))), strict_mode(config))
        if _no_paths_given(config):
            # `pytest --protocol P` anywhere: the installed suite, not the current directory.
            config.args = [str(suites_root())]
    config.pluginmanager.register(ResultCollector(config), "wirecheck-results")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session) -> None:
    """A suite run's terminal is read by a person: the summary, one line per test that did not
    pass (ResultCollector.pytest_terminal_summary) and the report's path. pytest's own failure
    pages (each transcript in full, then its JSON: four failures printed over half a megabyte)
    come with ``-v`` or an explicit ``--tb``; the result file and the HTML report keep them
    whatever the terminal shows."""
    config = session.config
    if not config.getoption("wirecheck_protocol") or hasattr(config, "workerinput") \
            or config.option.tbstyle != "auto" or config.get_verbosity() >= 1:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    reporter.summary_failures = reporter.summary_errors = lambda: None
    reporter.reportchars = "".join(c for c in reporter.reportchars if c not in "fE")


def _no_paths_given(config) -> bool:
    """True unless the command line named what to collect (paths, node ids, --pyargs names);
    pytest then collects the ini's ``testpaths`` or the current directory, neither of which is
    the suite."""
    source = getattr(config, "args_source", None)
    return source is not None and source != config.ArgsSource.ARGS


def suites_root() -> Path:
    """The directory of the installed suites (``wirecheck/conformance/suites``)."""
    from wirecheck.conformance import suites
    return Path(suites.__file__).resolve().parent


def pytest_ignore_collect(collection_path, config):
    """With ``--protocol``, the other protocols' suites are not even imported."""
    proto = config.getoption("wirecheck_protocol", None)
    if not proto:
        return None
    path = Path(collection_path)
    root = suites_root()
    if path.parent != root or not path.is_dir():
        return None
    return True if _protocol_of_suite(path.name) != proto else None


# -- which suite an item belongs to ------------------------------------------------------------

def pytest_collection_modifyitems(config, items) -> None:
    proto = config.getoption("wirecheck_protocol")
    if not proto:
        return
    keep, drop = [], []
    for item in items:
        (keep if suite_protocol(item.path) in (proto, None) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# -- fixtures ----------------------------------------------------------------------------------

class _EmbeddedBrokers:
    """Reference brokers started on demand, one per protocol, for this process."""

    def __init__(self) -> None:
        self.running: dict[str, object] = {}

    def address(self, spec, profile: str | None = None) -> tuple:
        """The broker speaks the profile under test (a built-in profile name; a profile file
        extends one, whose name the broker gets). A broker reached by URL (its ``url``,
        e.g. SignalR's hub over HTTP + WebSocket) adds the URL."""
        key = (spec.id, profile)
        if key not in self.running:
            from wirecheck.reference_impl.core.server import ThreadedServer
            self.running[key] = ThreadedServer(
                spec.make_broker("127.0.0.1", 0, profile=profile, **spec.embedded_timing)).start()
        server = self.running[key]
        url = getattr(server.server, "url", None)
        return server.address + ((url,) if url else ())

    def stop(self) -> None:
        for server in self.running.values():
            server.stop()
        self.running.clear()


@pytest.fixture(scope="session")
def wirecheck_embedded():
    brokers = _EmbeddedBrokers()
    yield brokers
    brokers.stop()


@pytest.fixture
def wirecheck_spec(request):
    from wirecheck.reference_impl.core import registry
    proto = suite_protocol(request.node.path) or request.config.getoption("wirecheck_protocol")
    if proto is None:
        raise pytest.UsageError(f"{request.node.nodeid}: not in conformance/suites/<protocol> and no --protocol")
    return registry.get(proto)


@pytest.fixture
def wirecheck_profile(request, wirecheck_spec):
    from wirecheck.conformance.profiles import ProfileError, load_profile
    try:
        return load_profile(wirecheck_spec, request.config.getoption("wirecheck_profile"))
    except ProfileError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture
def target(request, wirecheck_spec, wirecheck_profile, wirecheck_embedded):
    """The implementation under test; closes every connection the test opened."""
    config = request.config
    address = config.getoption("wirecheck_target")
    embedded = address is None
    profile = wirecheck_profile
    if embedded:
        address = wirecheck_embedded.address(wirecheck_spec, profile.base)
        if wirecheck_spec.embedded_timing:        # the timers that broker was started with
            profile = dataclasses.replace(profile, timing={**profile.timing,
                                                           **wirecheck_spec.embedded_timing})
    timeout = config.getoption("wirecheck_timeout")
    allowance = _run_allowance(config, timeout, profile)
    allowance.begin_test()
    tgt = Target(address[0], address[1], wirecheck_spec, profile, timeout=timeout, embedded=embedded,
                 url=address[2] if len(address) > 2 else None,
                 budget=Budget(config.getoption("wirecheck_test_budget") or default_budget(timeout, profile),
                               run=allowance))
    request.node.stash[_TARGET_KEY] = tgt
    yield tgt
    tgt.close_all()


def _run_allowance(config, timeout: float, profile) -> RunAllowance:
    """The run's allowance (target.RunAllowance), made when the first test asks for it."""
    got = config.stash.get(_RUN_KEY, None)
    if got is None:
        cases, killing = config.stash.get(_CASES_KEY, (0, 0))
        seconds = config.getoption("wirecheck_run_budget") or default_run_budget(cases or 1, timeout, profile,
                                                                                 killing)
        got = config.stash[_RUN_KEY] = RunAllowance(seconds)
    return got


def pytest_collection_finish(session) -> None:
    # The cases the run's allowance is counted for: the suite tests that will run.
    suite = [i for i in session.items if suite_protocol(i.path) is not None]
    lifecycle.collected(session.config, suite)
    session.config.stash[_CASES_KEY] = (
        len(suite), sum(1 for i in suite if lifecycle.KILLS_THE_TARGET in getattr(i, "fixturenames", ())))


# -- verdicts and transcripts ------------------------------------------------------------------

def _requirement_ids(item) -> list[str]:
    ids: list[str] = []
    for mark in item.iter_markers("requirement"):
        ids.extend(mark.args)
    return ids


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    ids = _requirement_ids(item)
    proto = suite_protocol(item.path)
    if proto is None:
        return report
    tgt = item.stash.get(_TARGET_KEY, None)
    profile = tgt.profile if tgt is not None else None
    if report.when == "call":
        lifecycle.note_health(item)
    # a failure that names the requirement it broke (verdicts.Breach) is judged by that one
    broke = verdicts.broken_ids(call.excinfo.value, ids) if report.failed and call.excinfo else []
    verdict = verdicts.classify(report, call, proto, broke or ids, profile, strict_mode(item.config))
    allowance = item.config.stash.get(_RUN_KEY, None)
    if allowance is not None and (report.when == "call" or verdict != verdicts.PASS):
        allowance.end_test(verdict in (verdicts.PASS, verdicts.SKIPPED, verdicts.UNIMPLEMENTED,
                                       verdicts.INFORMATIONAL))
    if report.when == "call" or verdict != verdicts.PASS:
        # On the item too: JUnit XML writes the properties of the teardown report.
        ours = ("protocol", "requirements", "verdict", "broke")
        item.user_properties[:] = [p for p in item.user_properties if p[0] not in ours] + [
            ("protocol", proto), ("requirements", " ".join(ids)), ("verdict", verdict)] + (
            [("broke", " ".join(broke))] if broke else [])
        report.user_properties = list(item.user_properties)
    if verdict not in (verdicts.PASS, verdicts.SKIPPED, verdicts.HARNESS_ERROR) and ids:
        report.sections.append(("wirecheck requirements", verdicts.describe(proto, ids)))
    exc = call.excinfo.value if call.excinfo is not None else None
    if verdict != verdicts.PASS and getattr(exc, "expected", None):
        # The outcomes the test accepted, and what came instead, for the report.
        report.sections.append(("wirecheck outcome", json.dumps({"expected": exc.expected, "actual": exc.actual})))
    if verdict != verdicts.PASS and isinstance(exc, BaseExceptionGroup):
        # hypothesis found several distinct failures: each is reported with what it broke
        report.sections.append(("wirecheck failures", json.dumps(verdicts.distinct_failures(exc))))
    if verdict != verdicts.PASS and tgt is not None and tgt.transcripts:
        text, wire = attached_transcripts(item.config, tgt)
        report.sections.append(("wirecheck transcript", text))
        # The same, as data for the HTML report (sections are strings: they cross xdist).
        report.sections.append(("wirecheck wire", wire))
        _allure_attach(item.config, text)
    return report


def attached_transcripts(config, tgt) -> tuple[str, str]:
    """(the transcript text, the wire data as JSON) a failing report attaches, within the run's
    :data:`RUN_TRANSCRIPT_CHARS`; once that is spent, a note in their place."""
    text = tgt.render_transcripts()
    wire = json.dumps(tgt.transcripts_json())
    used = config.stash.get(_ATTACHED_KEY, 0)
    size = len(text) + len(wire)
    if used + size > RUN_TRANSCRIPT_CHARS:
        return (f"transcript left out ({len(tgt.transcripts)} connection(s), {size} characters): the "
                f"reports of this run already hold {used} characters of transcripts (the run's "
                f"allowance is {RUN_TRANSCRIPT_CHARS}); the earlier failures' are kept"), "[]"
    config.stash[_ATTACHED_KEY] = used + size
    return text, wire


_SEVERITY = {"MUST": "critical", "SHOULD": "normal", "MAY": "minor"}


@pytest.fixture(autouse=True)
def _wirecheck_allure_labels(request):
    """allure labels of a suite test: epic = protocol, feature = document section, story =
    requirement ID, severity from the strongest level (MUST critical, SHOULD normal, MAY minor)."""
    config = request.config
    proto = suite_protocol(request.node.path)
    if proto is None or not config.pluginmanager.hasplugin("allure_pytest") \
            or not config.getoption("allure_report_dir", None):
        return
    import allure
    ids = _requirement_ids(request.node)
    cat = verdicts._catalogue(proto)
    reqs = [cat[i] for i in ids if i in cat]
    allure.dynamic.epic(proto)
    for section in dict.fromkeys(r.section for r in reqs):
        allure.dynamic.feature(section)
    for rid in ids:
        allure.dynamic.story(rid)
    levels = [r.level for r in reqs]
    strongest = next((lv for lv in ("MUST", "SHOULD", "MAY") if lv in levels), None)
    if strongest:
        allure.dynamic.severity(_SEVERITY[strongest])
    if reqs:
        allure.dynamic.description("\n".join(f"{r.id} [{r.level}] {r.section}: {r.summary}" for r in reqs))


def _allure_attach(config, text: str) -> None:
    if not config.pluginmanager.hasplugin("allure_pytest") or not config.getoption("allure_report_dir", None):
        return
    import allure
    allure.attach(text, name="wire transcript", attachment_type=allure.attachment_type.TEXT)


def pytest_report_teststatus(report, config):
    if report.when != "call":
        return None
    verdict = dict(report.user_properties).get("verdict") if report.user_properties else None
    if verdict == verdicts.NON_STRICT:
        return "non-strict", "N", "NON-STRICT"
    if verdict == verdicts.WAIVED:
        return "waived", "W", "WAIVED"
    if verdict == verdicts.INFORMATIONAL:
        return "informational", "I", "INFORMATIONAL"
    return None


# -- results: terminal summary and JSON report -------------------------------------------------

class ResultCollector:
    """Gathers each suite test's verdict (on the xdist controller too)."""

    def __init__(self, config) -> None:
        self.config = config
        self.results: dict[str, dict] = {}
        self.started = time.time()

    def pytest_runtest_logreport(self, report) -> None:
        props = dict(report.user_properties)
        if "verdict" not in props:
            return
        entry = self.results.setdefault(report.nodeid, {
            "nodeid": report.nodeid, "protocol": props["protocol"],
            "requirements": props["requirements"].split(), "verdict": verdicts.PASS,
            "message": "", "transcript": "", "wire": [], "expected": None, "actual": None,
            "duration": 0.0})
        entry["duration"] += report.duration
        if "target_rss_kb" in props:          # target/health.py: the target after this test
            entry["target"] = {k[len("target_"):]: v for k, v in props.items() if k.startswith("target_")}
        if verdicts.rank(props["verdict"]) > verdicts.rank(entry["verdict"]):
            sections = dict(report.sections)
            entry["verdict"] = props["verdict"]
            if props.get("broke"):
                entry["broke"] = props["broke"].split()
            else:
                entry.pop("broke", None)
            entry["message"] = verdicts.message(report)
            entry.pop("failures", None)
            if "wirecheck failures" in sections:         # hypothesis's several distinct failures
                entry["failures"] = json.loads(sections["wirecheck failures"])
            entry["message"] = verdicts.result_message(entry)
            entry["transcript"] = sections.get("wirecheck transcript", "")
            entry["wire"] = json.loads(sections.get("wirecheck wire", "[]"))
            outcome = json.loads(sections.get("wirecheck outcome", "{}"))
            entry["expected"], entry["actual"] = outcome.get("expected"), outcome.get("actual")

    def summary(self) -> dict:
        """Per protocol: verdict counts, coverage, and the requirements by their verdict (the
        worst of the tests naming them, as the reports read it: results.requirement_verdict)."""
        from wirecheck.conformance.requirements import catalogue, catalogue_data
        from wirecheck.conformance.report.results import requirement_verdict
        from wirecheck.reference_impl.core import registry
        per: dict[str, dict] = defaultdict(lambda: defaultdict(int))
        by_id: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for r in self.results.values():
            per[r["protocol"]][r["verdict"]] += 1
            # a test charged with another requirement's breach (verdicts.collateral) counts there
            for rid in dict.fromkeys(r["requirements"] + r.get("broke", [])):
                by_id[r["protocol"]][rid].append(r)
        broken = (verdicts.HARNESS_ERROR, verdicts.CRASH, verdicts.FAIL, verdicts.TIMEOUT, verdicts.NON_STRICT)
        out = {}
        for proto, counts in sorted(per.items()):
            spec = registry.get(proto)
            cat = catalogue(spec.requirements)
            waivers = self._waivers(spec)
            levels = catalogue_data(cat)
            verdict_of = {rid: requirement_verdict(tests, levels.get(rid, {}), rid)
                          for rid, tests in by_id[proto].items()}

            def having(*wanted):
                return sorted(rid for rid, v in verdict_of.items() if v in wanted)
            out[proto] = {"counts": dict(counts),
                          "waivers": waivers,
                          # a waiver whose requirement passes: no longer needed
                          "stale_waivers": sorted(set(waivers) & set(having(verdicts.PASS, verdicts.INFORMATIONAL))),
                          "catalogue": levels,
                          # tested: a test of it ran to its check (one skipped because the
                          # target was down, or a feature is absent, tested nothing; one that
                          # failed on another requirement's breach stopped before it)
                          "coverage": verdicts.coverage(cat, tested := {
                              rid for rid, tests in by_id[proto].items()
                              if any(t["verdict"] not in (verdicts.SKIPPED, verdicts.UNIMPLEMENTED)
                                     and (not t.get("broke") or rid in t["broke"]) for t in tests)}),
                          "untested_behind": verdicts.untested_behind(cat, by_id[proto], tested),
                          "failing_requirements": having(*broken),
                          # a feature the profile says is absent (and no test of it passed)
                          "unimplemented_requirements": having(verdicts.UNIMPLEMENTED),
                          "waived_requirements": having(verdicts.WAIVED),
                          # the test during which the target went down, and how it was found
                          "crashes": lifecycle.crashes(self.config),
                          "target_health": self._health(proto),
                          # failures that share a cause (causes.py): one finding each
                          "causes": causes.group(r for r in self.results.values() if r["protocol"] == proto)}
        return out

    #: Tests listed as the top growers of the target's memory and descriptors.
    TOP_GROWERS = 5

    def _health(self, proto: str) -> dict:
        """target/health.py, for the run: spinning threads, and the tests after which the
        target's memory and open descriptors grew most."""
        tests = [r for r in self.results.values() if r["protocol"] == proto and r.get("target")]

        def top(key):
            grown = sorted((r for r in tests if r["target"].get(key, 0) > 0),
                           key=lambda r: -r["target"][key])[:self.TOP_GROWERS]
            return [{"test": r["nodeid"], key: r["target"][key]} for r in grown]
        last = max(tests, key=lambda r: r["target"].get("rss_kb", 0), default=None)
        return {"spins": lifecycle.spins(self.config), "idle_checks": lifecycle.idle_checks(self.config),
                # the tests found, each on a target of its own, to leave it spinning or growing
                "charged": getattr(self, "health_charged", None),
                "rss_growers": top("rss_growth_kb"), "fd_growers": top("fd_growth"),
                "peak_rss_kb": last["target"]["rss_kb"] if last else None,
                "peak_fds": max((r["target"].get("fds", 0) for r in tests), default=None)}

    #: Tests re-run to find who grew the target's memory or descriptors, at most (the largest).
    MAX_HEALTH_RERUNS = 8
    #: Tests that ran while a spin went on, measured in groups (run/health_reruns.py), at most (the first).
    MAX_SPIN_DURING = 128

    def _blame_health(self) -> None:
        """With --target-command: the tests a spin began with, and those during which the
        target's memory or descriptors grew past a round's threshold, are each measured on a
        target of their own (run/health_reruns.py); one that spins or grows it there is NON-STRICT, with
        what was measured. Otherwise a spin with one suspect test is charged to it; with several
        (tests overlapping under xdist) the summary names them all and no verdict changes."""
        from wirecheck.conformance.run.health_reruns import SUSPECT_FDS, SUSPECT_KB, describe
        spins = lifecycle.spins(self.config)
        grown = sorted((r for r in self.results.values() if r.get("target") and (
            r["target"].get("rss_growth_kb", 0) >= SUSPECT_KB or r["target"].get("fd_growth", 0) >= SUSPECT_FDS)),
            key=lambda r: -r["target"].get("rss_growth_kb", 0))[:self.MAX_HEALTH_RERUNS]
        spun = sorted({t for spin in spins for t in spin["tests"] + spin.get("during", [])[:self.MAX_SPIN_DURING]
                       if t in self.results})
        growing = sorted(r["nodeid"] for r in grown)
        measured = lifecycle.health_check(self.config, spun, growing) if spun or growing else None
        if measured is None:
            for spin in spins:
                if len(spin["tests"]) == 1 and spin["tests"][0] in self.results:
                    self._non_strict(self.results[spin["tests"][0]], (
                        f"NON-STRICT: target busy while idle after this test: thread {spin['thread']} at "
                        f"{spin['cpu']:.0%} of a core with no test running"))
            return
        self.health_charged = []
        for nodeid, rec in sorted(measured.get("results", {}).items()):
            if rec.get("spin") or rec.get("growth"):
                self.health_charged.append({k: rec.get(k) for k in ("test", "spin", "growth", "rss_kb", "fds")})
                self._non_strict(self.results[nodeid], describe(rec))
        if measured.get("error"):
            self.health_charged.append({"error": measured["error"]})

    @staticmethod
    def _non_strict(entry: dict, message: str) -> None:
        if entry["verdict"] == verdicts.PASS:
            # no violation of the requirements the test checks: they keep its verdict
            entry["requirements_verdict"] = entry["verdict"]
            entry["verdict"] = verdicts.NON_STRICT
            entry["message"] = message

    def _waivers(self, spec) -> dict:
        from wirecheck.conformance.profiles import ProfileError, load_profile
        try:
            return dict(load_profile(spec, self.config.getoption("wirecheck_profile")).waivers)
        except ProfileError:
            return {}

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        tr = terminalreporter
        tr.section("wirecheck")
        for proto, s in self.summary().items():
            c, cov = s["counts"], s["coverage"]
            tr.write_line(
                f"{proto}: {c.get(verdicts.PASS, 0)} passed, {c.get(verdicts.FAIL, 0)} failed, "
                f"{c.get(verdicts.CRASH, 0)} crash, "
                f"{c.get(verdicts.TIMEOUT, 0)} timeout, {c.get(verdicts.NON_STRICT, 0)} non-strict, "
                f"{c.get(verdicts.WAIVED, 0)} waived, {c.get(verdicts.UNIMPLEMENTED, 0)} unimplemented, "
                f"{c.get(verdicts.INFORMATIONAL, 0)} informational, "
                f"{c.get(verdicts.HARNESS_ERROR, 0)} harness-error; "
                f"requirements tested MUST {cov['MUST'][0]}/{cov['MUST'][1]}, "
                f"SHOULD {cov['SHOULD'][0]}/{cov['SHOULD'][1]}, MAY {cov['MAY'][0]}/{cov['MAY'][1]}, "
                f"untestable {cov['untestable']}")
            for crash in s["crashes"]:
                tr.write_line("  " + crash_line(crash))
            for spin in s["target_health"]["spins"]:
                tr.write_line(f"  target busy while idle: thread {spin['thread']} at {spin['cpu']:.0%} of a core "
                              f"with no test running, since {' or '.join(spin['tests']) or 'an unknown test'}")
            for c in s["causes"]:
                tr.write_line(f"  one cause, {c['tests']} tests, {len(c['requirements'])} requirements: "
                              f"{c['cause']} (e.g. {c['example']})")
            for line in failure_lines(self.results.values(), proto):
                tr.write_line("  " + line)
            if s["failing_requirements"]:
                tr.write_line(f"  not met: {', '.join(s['failing_requirements'])}")
            if s["untested_behind"]:
                tr.write_line("  MUST not tested (their tests stopped at another breach first): " + ", ".join(
                    f"{rid} (behind {'/'.join(b)})" for rid, b in s["untested_behind"].items()))
            if s["unimplemented_requirements"]:
                tr.write_line(f"  unimplemented (profile): {', '.join(s['unimplemented_requirements'])}")
            if s["waived_requirements"]:
                tr.write_line(f"  waived (profile): {', '.join(s['waived_requirements'])}")
            if s["stale_waivers"]:
                tr.write_line(f"  stale waivers (the requirement passes): {', '.join(s['stale_waivers'])}")
        if self.config.stash.get(_HTML_KEY, None):
            tr.write_line(f"report: {self.config.stash[_HTML_KEY]}")
        elif self.config.getoption("wirecheck_report"):
            tr.write_line(f"results: {self.config.getoption('wirecheck_report')}")
        if self.config.get_verbosity() < 1 and self.config.option.tbstyle == "auto" and any(
                r["verdict"] in FAILURE_VERDICTS for r in self.results.values()):
            tr.write_line("each failure's transcript: the report, or -v")

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        if hasattr(self.config, "workerinput"):
            return
        from wirecheck.conformance.run import signals as run_signals
        stopped_by = run_signals.received(self.config)
        if stopped_by is None:                 # stopped: no re-runs of suspects on fresh targets
            run_signals.ending(self.config, False)      # re-runs may be long: a signal cuts them short
            try:
                self._blame_health()
            except KeyboardInterrupt:          # stopped during the re-runs: what was judged is written
                stopped_by = run_signals.received(self.config)
            finally:
                run_signals.ending(self.config, True)
        if (lifecycle.spins(self.config) or getattr(self, "health_charged", None)) and strict_mode(self.config) \
                and int(exitstatus) == pytest.ExitCode.OK:
            session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED      # NON-STRICT under --strict
        if int(exitstatus) == pytest.ExitCode.OK and lifecycle.crashes(self.config):
            # the target went down: a failure even when no test could be charged with it
            session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
        if int(exitstatus) == pytest.ExitCode.TESTS_FAILED and any(
                r["verdict"] == verdicts.HARNESS_ERROR for r in self.results.values()):
            # The kit failed, not (only) the target: exit 2, as `wirecheck check` documents.
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        if stopped_by is not None:
            session.exitstatus = 128 + stopped_by                 # 130 (SIGINT), 143 (SIGTERM)
        path = self.config.getoption("wirecheck_report")
        if not path:
            return
        # FILE.html: the HTML report, and its result file beside it (FILE.json).
        html = path if path.endswith(".html") else None
        if html:
            path = html[:-len(".html")] + ".json"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        doc = {"started": self.started, "finished": time.time(), "exitstatus": int(session.exitstatus),
               "target": self.config.getoption("wirecheck_target"),
               "label": self.config.getoption("wirecheck_label"),
               "profile": self.config.getoption("wirecheck_profile"),
               "strict": strict_mode(self.config),
               "summary": self.summary(), "tests": sorted(self.results.values(), key=lambda r: r["nodeid"])}
        if stopped_by is not None:
            import signal
            doc["interrupted"] = {"signal": signal.Signals(stopped_by).name,
                                  "not_run": max(session.testscollected - len(self.results), 0),
                                  "not_run_tests": [i.nodeid for i in session.items if i.nodeid not in self.results]}
        from wirecheck.conformance.atomic_file import write_json
        write_json(path, doc)
        if html:
            from wirecheck.conformance.report.index import write
            from wirecheck.conformance.report.results import load_run
            write([load_run(path)], html)
            self.config.stash[_HTML_KEY] = os.path.abspath(html)
