"""Run one state machine for tests/conformance/strategies/test_stateful_coverage.py and print the pairs it sent, as
JSON: ``python -m tests.support.stateful_coverage_run NAME [ARGS...]``.

In a process of its own on purpose: Hypothesis draws constants from the source of the modules
loaded, so a derandomized run gives the same examples only when the same modules are loaded;
inside a pytest worker that depends on which other test files it collected.
"""
from __future__ import annotations

import json
import sys
from collections import Counter

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from wirecheck.conformance.strategies import (blipmq_machine, micromessage2_machine, rabbitmq_stream_machine,
                                    signalr_machine, vibemq_machine)


def _run(machine_class, examples: int, steps: int) -> Counter:
    covered = type(f"Covered{machine_class.__name__}", (machine_class,), {"reached": Counter()})
    run_state_machine_as_test(covered, settings=settings(
        max_examples=examples, stateful_step_count=steps, derandomize=True, database=None,
        deadline=None, suppress_health_check=list(HealthCheck)))
    return covered.reached


def machine(name: str, *args: str):
    """(machine class, examples, steps) of one run."""
    if name == "blipmq":
        return blipmq_machine.BlipMachine, 300, 30
    if name == "vibemq":
        return vibemq_machine.VibeMachine, 60, 30
    if name == "rabbitmq-stream":
        return rabbitmq_stream_machine.StreamMachine, 40, 30
    if name == "signalr":
        profile, encoding = args

        class Machine(signalr_machine.HubMachine):
            def make_driver(self):
                return signalr_machine.SessionDriver(profile, encoding)
        return Machine, 30, 25
    if name == "micromessage2":
        class Machine(micromessage2_machine.WindowMachine):
            pass
        Machine.profile = args[0]
        return Machine, 20, 20
    raise SystemExit(f"unknown machine {name}")


if __name__ == "__main__":
    reached = _run(*machine(*sys.argv[1:]))
    print(json.dumps([[list(k) if isinstance(k, tuple) else k, v] for k, v in reached.items()]))
