"""``wirecheck check-client --protocol P --client-command CMD``: a client library judged by what
happens to it, not only by its bytes.

For each scenario (conformance/clients/scenarios.py and the protocol's scripted ones), the kit
starts the reference broker behind a checking relay (conformance/clients/serve_check.py) playing that
scenario, runs the implementer's driver program once (conformance/clients/driver.py: the
protocol's standard workload with their library), and judges:

- the wire, as ``wirecheck serve --check-clients`` does (one case per requirement the client
  broke, one PASS case per connection);
- the outcome the scenario calls for (its ``client_outcome``): ``success`` where the scenario
  changes nothing the client may notice, ``error`` where it makes a request fail (the driver
  must exit non-zero naming the error; exit 0 is FAIL: the library reported success for a
  request the server refused), ``either`` where recovering and surfacing the error are both
  right (the server ended the connection). Whatever the scenario: CRASH when the driver died of
  a signal or an uncaught error, HANG when it did not exit within the budget;
- the messages: every workload message the server delivered is handed to the application (a
  ``received`` line) at least once when the driver reports success (else lost), and no more
  often than the server delivered it (else duplicated);
- NOT-RUN when the scenario never acted on any connection (it tried nothing: a short workload
  that ended before a timed scenario fired, a request kind the driver never made).

Outcome verdicts rest on the protocol's client requirements (its catalogue's ``CLIENT``
entries: the document's sentence where it has one, else the kit's reading, SHOULD).
"""
from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass

from wirecheck.conformance.report import verdicts
from wirecheck.conformance.clients.driver import (CRASH, ERROR, HANG, SUCCESS, DriverRun, command_argv,
                                                 run_driver)
from wirecheck.conformance.clients.scenarios import scenarios
from wirecheck.conformance.clients.serve_check import ClientChecker, summarise

#: Messages the workload publishes ({count}).
DEFAULT_COUNT = 10
#: Seconds a driver run may take under one scenario before it is a HANG.
DEFAULT_BUDGET = 30.0
#: How the workload's messages are named (the body the driver publishes, the ID it prints).
MESSAGE_ID = re.compile(r"^(?:msg|item)-\d+$")
#: The ID inside a delivered body (a library may wrap the body: an AMQP 1.0 message in a
#: RabbitMQ Stream chunk, a JSON document).
ID_IN_BODY = re.compile(rb"(?:msg|item)-\d+")
#: Scenario options check-client gives unless told otherwise: a point in the conversation rather
#: than a time for ``close`` and ``server-close`` (a quick workload would end before a timer
#: fired: NOT-RUN), a delay that keeps a run to seconds.
DEFAULT_OPTIONS = {"close": {"writes": "3"}, "delay": {"delay": "0.2"}, "server-close": {"answers": "2"}}


@dataclass(frozen=True)
class OutcomeRules:
    """A protocol's client requirements for outcomes (IDs of its catalogue)."""
    complete: str        # the workload completes under a scenario it may not notice
    refused: str         # a refused request reaches the application as an error
    ended: str           # a connection the server ends is reported, not hung on
    deliver: str         # every delivered message reaches the application, no more often
    crash: str           # legal server behaviour never kills the client


#: protocol -> its outcome requirements (protocols not here: the outcome is not judged yet)
RULES = {
    "blipmq": OutcomeRules("BLIP-CLIENT-007", "BLIP-CLIENT-008", "BLIP-CLIENT-009", "BLIP-CLIENT-010",
                           "BLIP-CLIENT-011"),
    "rabbitmq-stream": OutcomeRules("RMQS-CLIENT-001", "RMQS-CLIENT-002", "RMQS-CLIENT-003",
                                    "RMQS-CLIENT-004", "RMQS-CLIENT-005"),
    "micromessage2": OutcomeRules("MM2-CLIENT-001", "MM2-CLIENT-002", "MM2-CLIENT-003", "MM2-CLIENT-004",
                                  "MM2-CLIENT-005"),
    "signalr": OutcomeRules("SIGR-CLIENT-001", "SIGR-CLIENT-002", "SIGR-CLIENT-003", "SIGR-CLIENT-004",
                            "SIGR-CLIENT-005"),
    "vibemq": OutcomeRules("VIBE-CLIENT-002", "VIBE-CLIENT-003", "VIBE-CLIENT-004", "VIBE-CLIENT-005",
                           "VIBE-CLIENT-006"),
}


def delivered_messages(spec, capture_path: str, ports) -> Counter:
    """Workload message IDs the server delivered to clients in the recording, with how often
    (its redeliveries counted: a message delivered twice may be handed over twice)."""
    from wirecheck.conformance.captures.decode import PcapDecoder
    from wirecheck.conformance.captures.pcapfile import PcapReader
    extract = _EXTRACTORS.get(spec.id)
    found: Counter = Counter()
    if extract is None:
        return found

    class Collect(PcapDecoder):
        def data(self, s, data, time):
            from wirecheck.conformance.captures.decode import feed_items
            from wirecheck.reference_impl.core.errors import FrameError
            items, ended = feed_items(s.conn.user[s.direction], data)
            if s.direction == "s2c":
                for item in items:
                    if not isinstance(item, FrameError):
                        for body in extract(item):
                            m = ID_IN_BODY.search(body if isinstance(body, bytes) else str(body).encode())
                            if m:
                                found[m.group().decode()] += 1
            if ended:
                s.done = True

    sink = Collect(spec, ports, out=open(os.devnull, "w"))
    last = 0.0
    with PcapReader(capture_path) as reader:
        for seg in reader:
            last = seg.time
            sink.segment(seg)
    sink.close(last)
    sink.out.close()
    return found


def _blipmq_bodies(frame):
    from wirecheck.reference_impl.blipmq.codec import Publish
    return [frame.message] if isinstance(frame, Publish) else []


def _rmqs_bodies(frame):
    from wirecheck.reference_impl.rabbitmq_stream.codec import Deliver
    return frame.chunk.messages() if isinstance(frame, Deliver) else []


def _vibemq_bodies(frame):
    import json
    from wirecheck.reference_impl.vibemq.constants import CommandType
    if getattr(frame, "type", None) != CommandType.DELIVER:
        return []
    return [json.dumps(frame.payload, ensure_ascii=False).encode()]


def _signalr_bodies(frame):
    """An invocation's string result (``Echo``'s ``msg-N``), and a stream's integer items as
    ``item-N`` (``Counter``'s)."""
    from wirecheck.reference_impl.signalr.messages import Completion, StreamItem
    if isinstance(frame, StreamItem) and isinstance(frame.item, int) and not isinstance(frame.item, bool):
        return [f"item-{frame.item}".encode()]
    if isinstance(frame, Completion) and isinstance(frame.result, str):
        return [frame.result.encode()]
    return []


def _mm2_bodies(frame):
    from wirecheck.reference_impl.micromessage2.codec import Message
    return [frame.payload] if isinstance(frame, Message) else []


#: protocol -> frame -> the message bodies it delivers (protocols without one: not judged yet)
_EXTRACTORS = {"blipmq": _blipmq_bodies, "rabbitmq-stream": _rmqs_bodies, "vibemq": _vibemq_bodies,
               "signalr": _signalr_bodies, "micromessage2": _mm2_bodies}


def judge(run: DriverRun, expect: str, acted: bool, delivered: Counter, rules: OutcomeRules,
          level_of) -> tuple[str, list[str], str]:
    """(verdict, requirement IDs, message) of one driver run under a scenario that calls for
    ``expect``. ``level_of(rid)``: the requirement's level (a SHOULD broken is NON-STRICT)."""
    how = run.describe()
    if run.outcome == CRASH:
        return verdicts.CRASH, [rules.crash], f"the client crashed: {how}"
    handed = Counter({k: v for k, v in run.received.items() if MESSAGE_ID.match(k)})
    lost = sorted(k for k in delivered if k not in handed)
    if run.outcome == HANG:
        if lost:
            # the server delivered what the client waits for: the hang is the loss's, whatever
            # the scenario did (a library that drops stream items before anyone subscribed
            # hangs under every scenario)
            return verdicts.HANG, [rules.deliver], (
                f"the client hung: {how}; the server had delivered {len(lost)} message(s) it never handed "
                f"over: {', '.join(lost[:10])}")
        rid = {SUCCESS: rules.complete, ERROR: rules.refused}.get(expect, rules.ended)
        return verdicts.HANG, [rid], f"the client hung: {how}"
    if not acted:
        return verdicts.NOT_RUN, [], (f"the scenario never acted on any connection ({how}): nothing "
                                      "was tried (a longer workload, or another scenario option, lets it act)")

    def broken(rid: str, text: str) -> tuple[str, list[str], str]:
        v = verdicts.FAIL if level_of(rid) == "MUST" else verdicts.NON_STRICT
        return v, [rid], text

    extra = sorted(k for k, n in handed.items() if n > delivered.get(k, 0))
    if extra:
        return broken(rules.deliver, f"the client handed over more often than the server delivered: "
                      + ", ".join(f"{k} ({handed[k]} times, delivered {delivered.get(k, 0)})" for k in extra[:10]))
    if run.outcome == SUCCESS:
        if expect == ERROR:
            return broken(rules.refused, f"the client reported success ({how}) where the scenario made a "
                          "request fail: its library did not surface the error")
        if lost:
            return broken(rules.deliver, f"the server delivered {len(lost)} message(s) the client never handed "
                          f"over, although it reported success: {', '.join(lost[:10])}")
        return verdicts.PASS, [rules.complete, rules.deliver, rules.crash], \
            f"the workload completed ({how}); {sum(handed.values())} message(s) handed over"
    # ERROR: the library surfaced an error
    if expect == SUCCESS:
        return broken(rules.complete, f"the client failed its workload where the scenario changes nothing it "
                      f"may notice: {how}")
    return verdicts.PASS, [rules.refused if expect == ERROR else rules.ended, rules.crash], \
        f"the client surfaced the error: {how}"


def scenario_names(protocol: str) -> list[str]:
    return list(scenarios(protocol))


def run_scenario(spec, scenario: str, command: str, *, options: dict | None = None, count: int = DEFAULT_COUNT,
                 budget: float = DEFAULT_BUDGET, profile: str | None = None, workdir: str | None = None) -> dict:
    """One driver run under ``scenario``: a client-check result document whose tests are the
    wire cases and the outcome case, their node IDs starting with the scenario."""
    from wirecheck.conformance.requirements import catalogue
    from wirecheck.reference_impl.core.server import ThreadedServer
    known = scenarios(spec.id)
    cls = known[scenario]
    opts = {**DEFAULT_OPTIONS.get(scenario, {}), **(options or {})}
    with tempfile.TemporaryDirectory(prefix="wirecheck-check-client-", dir=workdir) as tmp:
        broker_options = {"data_dir": os.path.join(tmp, "data")} if spec.id == "rabbitmq-stream" else {}
        if spec.extra_ports:
            broker_options["raw_port"] = 0
        broker = spec.make_broker("127.0.0.1", 0, profile=profile, **broker_options)
        checker = ClientChecker(spec, broker, scenario=scenario, scenario_options=opts, profile=profile,
                                capture_path=os.path.join(tmp, "clients.pcap"))
        with ThreadedServer(checker):
            values = {"host": "127.0.0.1", "port": checker.port, "count": count, "scenario": scenario,
                      "url": f"http://127.0.0.1:{checker.port}{checker.hub_path}" if checker.hub_path
                      else f"127.0.0.1:{checker.port}",
                      "raw_port": checker.raw_port if checker.raw_port is not None else ""}
            argv = command_argv(command, values)
            env = {f"WIRECHECK_{k.upper()}": str(v) for k, v in values.items()}
            # the caller's working directory: a driver named by a relative path (as the docs show
            # `python examples/check-client/rstream_driver.py`) is found where the user typed it
            run = run_driver(argv, budget, env=env)
        doc = checker.result_document(f"{spec.id} client under {scenario}")
        ports = [relay.port for relay in checker.relays]
        delivered = delivered_messages(spec, checker.capture_path, ports)
        acted = any(getattr(c.shaper, "acted", False) for c in checker.connections.values())
    cat = catalogue(spec.requirements)
    rules = RULES.get(spec.id)
    # a scenario whose options change what a client may do (a code a library may rightly take
    # as success) says so through ``expected_outcome``
    expect = cls.expected_outcome(opts) if hasattr(cls, "expected_outcome") else getattr(cls, "client_outcome", "either")
    for t in doc["tests"]:
        t["nodeid"] = t["nodeid"].replace("clients::", f"check-client::{scenario}::", 1)
    if rules is None:
        verdict, ids, message = (verdicts.HARNESS_ERROR, [], f"{spec.id} has no client requirements for "
                                 "outcomes yet: the driver's outcome is not judged")
    else:
        verdict, ids, message = judge(run, expect, acted, delivered, rules,
                                      lambda rid: cat[rid].level if rid in cat else "MUST")
    detail = [message, f"the scenario: {scenario} ({expect}"
              f" expected); options {opts or 'none'}", f"the driver: {' '.join(argv)}: {run.describe()}"]
    if delivered or run.received:
        detail.append(f"messages: the server delivered {sum(delivered.values())}, the client handed over "
                      f"{sum(run.received.values())}")
    if run.errors:
        detail.append("its errors: " + "; ".join(run.errors[:3]))
    words = run.last_words()
    if verdict != verdicts.PASS and words:
        detail.append(words)
    doc["tests"].insert(0, {"protocol": spec.id, "nodeid": f"check-client::{scenario}::outcome",
                            "requirements": ids, "verdict": verdict, "message": "\n".join(detail),
                            "expected": expect,
                            "actual": run.outcome, "duration": run.seconds, "transcript": "", "wire": []})
    doc["driver"] = {"argv": argv, "outcome": run.outcome, "returncode": run.returncode, "seconds": run.seconds,
                     "received": sum(run.received.values()), "delivered": sum(delivered.values()),
                     "errors": run.errors[:10]}
    doc["acted"] = acted
    return summarise(doc, spec)
