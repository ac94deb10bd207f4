"""Every reachable (session state x client frame type) pair of each protocol's state machine is
sent at least once: each machine runs in memory against the reference session, derandomized, and
its ``reached`` counter is checked against the protocol's matrix
(wirecheck/conformance/strategies/state_matrix.py; the matrices and their exclusions are next to each
machine). Each run is a process of its own (tests/support/stateful_coverage_run.py): a derandomized
Hypothesis run repeats its examples only when the same modules are loaded, which a pytest worker
does not guarantee. Each run takes a few seconds.
"""
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from wirecheck.conformance.strategies import (blipmq_machine, micromessage2_machine, rabbitmq_stream_machine,
                                    signalr_machine, vibemq_machine)

ROOT = Path(__file__).resolve().parents[3]


def _coverage(*machine: str) -> Counter:
    run = subprocess.run([sys.executable, "-m", "tests.support.stateful_coverage_run", *machine], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return Counter({tuple(k) if isinstance(k, list) else k: v for k, v in json.loads(run.stdout)})


def _check(matrix, reached: Counter) -> None:
    assert not matrix.unexpected(reached), f"pairs outside the matrix: {matrix.unexpected(reached)}"
    assert not matrix.missing(reached), \
        f"{matrix.protocol}: pairs never sent: {matrix.missing(reached)}\n{matrix.render(reached)}"


def test_blipmq_matrix():
    _check(blipmq_machine.MATRIX, _coverage("blipmq"))


def test_vibemq_matrix():
    _check(vibemq_machine.MATRIX, _coverage("vibemq"))


@pytest.mark.parametrize("profile, encoding", [("v1", "json"), ("v1", "messagepack"),
                                               ("draft", "json"), ("draft", "messagepack")])
def test_signalr_matrix(profile, encoding):
    _check(signalr_machine.matrix_for(profile, encoding), _coverage("signalr", profile, encoding))


def test_rabbitmq_stream_matrix():
    _check(rabbitmq_stream_machine.MATRIX, _coverage("rabbitmq-stream"))


@pytest.mark.parametrize("profile", ["document", "sharpmessaging"])
def test_micromessage2_matrix(profile):
    _check(micromessage2_machine.MATRIX, _coverage("micromessage2", profile))
