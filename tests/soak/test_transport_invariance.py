"""Verdicts invariant under benign transport, the fast modes (soak/transport.py runs the full
matrix in `make soak`, joined writes and a 0.1 s link included): each protocol's suite against
its reference broker, directly and with the broker's bytes split into 1-byte writes, or with the
frames the server may send at any moment added (RabbitMQ Stream Heartbeats, SignalR Pings) —
every test gets the same verdict. The timer tests and the state machines are left out here (their
minutes through a relay belong to the soak)."""
import pytest

from soak import transport

pytestmark = pytest.mark.slow

QUICK = ("-m", "not slow", "-k", "not stateful")


@pytest.mark.parametrize("protocol", transport.PROTOCOLS)
def test_the_same_verdicts_through_benign_transports(tmp_path, protocol):
    direct = transport.suite_verdicts(protocol, "direct", str(tmp_path), QUICK, workers=1)
    assert len(direct["verdicts"]) > 40, direct
    broken = {k: v for k, v in direct["verdicts"].items()
              if v not in ("PASS", "SKIPPED", "UNIMPLEMENTED", "INFORMATIONAL")}
    assert not broken, broken
    for mode in transport.modes_for(protocol, ("split", "extra")):
        # split: the first 2 KiB of each write byte by byte (the rest in 4 KiB writes)
        options = {"bytes": "2048"} if mode == "split" else None
        other = transport.suite_verdicts(protocol, mode, str(tmp_path), QUICK, workers=1, options=options)
        differs = transport.compare(direct, other)
        assert not differs, (mode, differs)
