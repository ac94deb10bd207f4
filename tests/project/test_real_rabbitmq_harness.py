"""The real-RabbitMQ harness itself: the node starts, speaks the stream handshake, and is
gone (every process of its group, its directory) once the ``with`` block ends."""
from __future__ import annotations

import os

import pytest

from tools.rabbitmq_real import RealRabbitMQ, available, live_group_pids, stream_handshake


def test_real_rabbitmq_starts_handshakes_and_stops():
    if not available() and not os.environ.get("WIRECHECK_REQUIRE_REAL_PEERS"):
        pytest.skip("RabbitMQ not installed (`make real-peers`); "
                    "set WIRECHECK_REQUIRE_REAL_PEERS to make this a failure")
    with RealRabbitMQ() as rmq:
        assert rmq.host == "127.0.0.1"
        assert len({rmq.stream_port, rmq.amqp_port}) == 2
        tune = stream_handshake(rmq.host, rmq.stream_port, timeout=5.0)
        assert tune["frame_max"] > 0 and tune["heartbeat"] >= 0
        pgid, workdir = rmq.pgid, rmq.dir
        assert live_group_pids(pgid)
        assert os.path.isdir(workdir)
    assert rmq.proc is None
    assert live_group_pids(pgid) == []
    assert not os.path.exists(workdir)
    with pytest.raises(OSError):
        stream_handshake(rmq.host, rmq.stream_port, timeout=2.0)
