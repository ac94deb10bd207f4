"""The VibeMQ server session in memory: ordering, auth, compression, every command's answer,
delivery modes, redelivery/DLQ/TTL on a fake clock, errors, rate and connection limits."""
import struct

import pytest

from wirecheck.reference_impl.vibemq import codec
from wirecheck.reference_impl.vibemq import compression as comp
from wirecheck.reference_impl.vibemq.constants import CommandType as T, Compression
from wirecheck.reference_impl.vibemq.session import SessionConfig, VibeSession, Credentials
from wirecheck.reference_impl.vibemq.state import BrokerState, StateConfig

AUTH = {"authPassword": "vibemq"}


class Peer:
    """One client connection to a session, with a decoder for what comes back."""

    def __init__(self, state, profile="document", **cfg):
        self.session = VibeSession(state, SessionConfig(profile=profile, **cfg))
        self.decoder = codec.Decoder()
        self.profile = profile

    def raw(self, data: bytes, now: float = 0.0):
        return self.decoder.feed(b"".join(self.session.receive(data, now)))

    def send(self, *messages, now: float = 0.0, compression=None):
        data = b"".join(codec.encode(m, "document" if self.profile == "document" else "vibemq-1.8",
                                     compression) for m in messages)
        return self.raw(data, now)

    def tick(self, now):
        return self.decoder.feed(b"".join(self.session.tick(now)))

    def connect(self, **headers):
        [ack] = self.send(msg(T.CONNECT, "c", headers={**AUTH, **headers}))
        assert ack.type == T.CONNECT_ACK
        return ack


def msg(kind, mid, queue=None, payload=None, headers=None):
    return codec.Message(kind, mid, queue, payload, headers)


@pytest.fixture
def state():
    return BrokerState(StateConfig(ack_timeout=10.0, retry_base_delay=1.0, retry_max_delay=4.0))


def ready(state, profile="document", **cfg):
    p = Peer(state, profile, **cfg)
    p.connect()
    return p


# -- ordering and authentication ------------------------------------------------------------

def test_before_connect_only_connect_and_ping(state):
    p = Peer(state)
    [pong] = p.send(msg(T.PING, "p1"))
    assert (pong.type, pong.id, pong.headers) == (T.PONG, "p1", None)
    for kind in (T.PUBLISH, T.SUBSCRIBE, T.LIST_QUEUES, T.DISCONNECT, T.ACK, T.PONG):
        [err] = p.send(msg(kind, "r1", "q"))
        assert (err.type, err.id, err.error_code) == (T.ERROR, "r1", "NOT_AUTHENTICATED")
    assert not p.session.closed


def test_connect_ack_document_profile(state):
    p = Peer(state)
    [ack] = p.send(msg(T.CONNECT, "conn_1", headers=AUTH))
    assert ack.id == "conn_1"
    assert ack.headers == {"serverVersion": "1.1.0", "connectionId": f"srv_{p.session.conn}"}


def test_connect_ack_real_profile_has_new_id_and_no_headers(state):
    p = Peer(state, "vibemq-1.8")
    [ack] = p.send(msg(T.CONNECT, "conn_1", headers=AUTH))
    assert ack.type == T.CONNECT_ACK and ack.id != "conn_1" and len(ack.id) == 32
    assert ack.headers is None


@pytest.mark.parametrize("profile,missing", [("document", "AUTH_FAILED"), ("vibemq-1.8", "AUTH_REQUIRED")])
def test_auth_errors_leave_the_connection_open(state, profile, missing):
    p = Peer(state, profile)
    [err] = p.send(msg(T.CONNECT, "c1", headers={"authPassword": "wrong"}))
    assert (err.type, err.error_code) == (T.ERROR, "AUTH_FAILED")
    [err] = p.send(msg(T.CONNECT, "c2"))
    assert err.error_code == missing
    assert (err.id == "c2") == (profile == "document")
    [err] = p.send(msg(T.PUBLISH, "x", "q"))
    assert err.error_code == "NOT_AUTHENTICATED"
    p.connect()
    assert not p.session.closed


def test_user_password_pairs_and_no_auth(state):
    creds = Credentials.from_api_keys(["alice:s3cret"])
    p = Peer(state, credentials=creds)
    [err] = p.send(msg(T.CONNECT, "c", headers={"authPassword": "s3cret"}))
    assert err.error_code == "AUTH_FAILED"
    [ok] = p.send(msg(T.CONNECT, "c", headers={"authUsername": "alice", "authPassword": "s3cret"}))
    assert ok.type == T.CONNECT_ACK
    real = Peer(state, "vibemq-1.8", credentials=creds)
    [err] = real.send(msg(T.CONNECT, "c", headers={"authPassword": "s3cret"}))
    assert err.error_code == "AUTH_REQUIRED"
    open_ = Peer(state, credentials=Credentials(frozenset()))
    [ok] = open_.send(msg(T.CONNECT, "c"))
    assert ok.type == T.CONNECT_ACK


def test_disconnect_closes_without_answer(state):
    p = ready(state)
    assert p.send(msg(T.DISCONNECT, "d")) == []
    assert p.session.closed
    assert p.send(msg(T.PING, "p")) == []


# -- compression ----------------------------------------------------------------------------

@pytest.mark.parametrize("offered,server,agreed", [
    ("brotli,gzip", None, "brotli"), ("gzip,brotli", None, "gzip"), ("GZip", None, "gzip"),
    ("lz4, gzip", None, "gzip"), ("lz4", None, None), (None, None, None),
    ("brotli,gzip", (Compression.GZIP,), "gzip"), ("brotli", (), None),
])
def test_negotiation_follows_the_clients_order(state, offered, server, agreed):
    cfg = {} if server is None else {"compressions": server}
    p = Peer(state, **cfg)
    headers = dict(AUTH)
    if offered:
        headers["supported-compression"] = offered
    [ack] = p.send(msg(T.CONNECT, "c", headers=headers))
    assert ack.header("negotiated-compression") == agreed
    if agreed is None:
        assert "negotiated-compression" not in (ack.headers or {})


@pytest.mark.parametrize("name,flag", [("gzip", Compression.GZIP), ("brotli", Compression.BROTLI)])
def test_threshold_decides_per_frame(state, name, flag):
    sub = Peer(state)
    [ack] = sub.send(msg(T.CONNECT, "c", headers={**AUTH, "supported-compression": name}))
    assert ack.compression == Compression.NONE          # the ConnectAck itself is plain
    sub.send(msg(T.SUBSCRIBE, "s", "big"))
    pub = ready(state)
    small = msg(T.PUBLISH, "m1", "big", {"x": "y"})
    large = msg(T.PUBLISH, "m2", "big", {"x": "y" * 2000})
    pub.send(small, large)
    out = sub.session.receive(b"", 0.0)
    frames = [codec.Decoder().feed(f)[0] for f in out]
    assert [(f.id, f.compression) for f in frames] == [("m1", Compression.NONE), ("m2", flag)]
    assert frames[1].payload == {"x": "y" * 2000}
    # exactly at the threshold: compressed; one byte under: not
    body = codec.encode_body(frames[1], "document")
    assert struct.unpack(">I", out[1][:4])[0] == len(comp.compress(body, flag))


def test_threshold_boundary(state):
    p = Peer(state, compression_threshold=64)
    p.connect(**{"supported-compression": "gzip"})
    for pad in range(0, 40):
        m = msg(T.PING, "p" + "x" * pad)
        size = len(codec.encode_body(codec.Message(T.PONG, m.id), "document"))
        [pong] = p.send(m)
        assert pong.compression == (Compression.GZIP if size >= 64 else Compression.NONE), size


def test_client_frames_read_with_their_own_flag(state):
    p = ready(state)                                 # nothing negotiated
    for flag in (Compression.NONE, Compression.GZIP, Compression.BROTLI):
        [pong] = p.send(msg(T.PING, f"p{flag}"), compression=flag)
        assert pong.id == f"p{flag}" and pong.compression == Compression.NONE


def test_mixed_stream_in_one_read(state):
    p = ready(state)
    data = (codec.encode(msg(T.PING, "a"), compression=Compression.GZIP)
            + codec.encode(msg(T.PING, "b"))
            + codec.encode(msg(T.PING, "c"), compression=Compression.BROTLI))
    assert [f.id for f in p.raw(data)] == ["a", "b", "c"]


# -- malformed input ------------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["document", "vibemq-1.8"])
def test_bad_length_or_flag_drops_the_connection(state, profile):
    for data in (b"\x00\x00\x00\x01\x00\x01", b"\x00\x20\x00\x00\x00", b"\x00\x00\x00\x0e\x07"):
        p = ready(state, profile)
        assert p.raw(data) == []
        assert p.session.closed


@pytest.mark.parametrize("profile", ["document", "vibemq-1.8"])
def test_bad_body(state, profile):
    p = ready(state, profile)
    body = b"\x01\x0a\x00\x02p1\x00\x00\x00\x00\x00\x03{{{\x00\x00"      # payload not JSON
    out = p.raw(struct.pack(">IB", len(body), 0) + body + codec.encode(msg(T.PING, "after")))
    assert p.session.closed
    if profile == "document":
        assert [(f.type, f.error_code) for f in out] == [(T.ERROR, "INVALID_MESSAGE")]
    else:
        assert out == []


def test_corrupt_compressed_body(state):
    p = ready(state)
    out = p.raw(struct.pack(">IB", 4, Compression.GZIP) + b"nope")
    assert [f.error_code for f in out] == ["INVALID_MESSAGE"] and p.session.closed


@pytest.mark.parametrize("profile,code", [("document", "INVALID_MESSAGE"), ("vibemq-1.8", "UNKNOWN_COMMAND")])
def test_unknown_and_server_only_types(state, profile, code):
    p = ready(state, profile)
    body = b"\x01\x4d\x00\x02u1\x00\x00\x00\x00\x00\x00\x00\x00"   # type 77
    [err] = p.raw(struct.pack(">IB", len(body), 0) + body)
    assert (err.type, err.id, err.error_code) == (T.ERROR, "u1", code)
    for kind in (T.CONNECT_ACK, T.PONG, T.DELIVER, T.ERROR, T.PUBLISH_ACK):
        [err] = p.send(msg(kind, "s1"))
        assert (err.id, err.error_code) == ("s1", code)
    assert not p.session.closed
    fresh = Peer(state, profile)
    [err] = fresh.raw(struct.pack(">IB", len(body), 0) + body)
    assert err.error_code == "NOT_AUTHENTICATED"


@pytest.mark.parametrize("queue,headers", [
    ("bad name", None), ("q" * 257, None), ("q/x", None),
    ("ok", {f"h{i}": "v" for i in range(51)}), ("ok", {"h": "v" * 4097}),
])
def test_validation(state, queue, headers):
    p = ready(state)
    [err] = p.send(msg(T.PUBLISH, "v1", queue, 1, headers))
    assert (err.id, err.error_code) == ("v1", "INVALID_MESSAGE")
    real = ready(state, "vibemq-1.8")
    [err] = real.send(msg(T.PUBLISH, "v1", queue, 1, headers))
    assert err.error_code == "INVALID_MESSAGE" and err.id != "v1"


@pytest.mark.parametrize("kind", [T.PUBLISH, T.SUBSCRIBE, T.UNSUBSCRIBE, T.CREATE_QUEUE,
                                  T.DELETE_QUEUE, T.QUEUE_INFO])
@pytest.mark.parametrize("profile,code", [("document", "INVALID_MESSAGE"), ("vibemq-1.8", "INVALID_QUEUE")])
def test_queue_required(state, kind, profile, code):
    p = ready(state, profile)
    [err] = p.send(msg(kind, "r"))
    assert (err.id, err.error_code) == ("r", code)


# -- commands -------------------------------------------------------------------------------

def test_document_answers(state):
    p = ready(state)
    [a] = p.send(msg(T.PUBLISH, "msg_1", "n", {"t": 1}))
    assert (a.type, a.id, a.queue, a.headers) == (T.PUBLISH_ACK, "msg_1", None,
                                                 {"messageId": "msg_1", "queueName": "n"})
    [a, d] = p.send(msg(T.SUBSCRIBE, "sub_1", "n"))                 # the backlog follows the ack
    assert (a.type, a.headers) == (T.SUBSCRIBE_ACK, {"queueName": "n", "subscriptionId": "sub_1"})
    assert (d.type, d.id, d.queue, d.payload) == (T.DELIVER, "msg_1", "n", {"t": 1})
    [a] = p.send(msg(T.UNSUBSCRIBE, "u1", "n"))
    assert (a.type, a.id, a.headers) == (T.UNSUBSCRIBE_ACK, "u1", {"queueName": "n"})
    [a] = p.send(msg(T.LIST_QUEUES, "l1"))
    assert (a.type, a.id, a.payload) == (T.LIST_QUEUES, "l1", ["n"])


def test_real_answers(state):
    p = ready(state, "vibemq-1.8")
    for kind, ack in ((T.PUBLISH, T.PUBLISH_ACK), (T.SUBSCRIBE, T.SUBSCRIBE_ACK),
                      (T.UNSUBSCRIBE, T.UNSUBSCRIBE_ACK), (T.CREATE_QUEUE, T.CREATE_QUEUE),
                      (T.QUEUE_INFO, T.QUEUE_INFO), (T.DELETE_QUEUE, T.DELETE_QUEUE)):
        a = p.send(msg(kind, "r1", "n"))[0]
        assert (a.type, a.id, a.queue, a.headers) == (ack, "r1", "n", None)
    [a] = p.send(msg(T.QUEUE_INFO, "r2", "gone"))           # unknown: an answer, no payload
    assert (a.type, a.payload) == (T.QUEUE_INFO, None)
    [a] = p.send(msg(T.DELETE_QUEUE, "r3", "gone"))
    assert a.type == T.DELETE_QUEUE


def test_create_queue_document(state):
    p = ready(state)
    [a] = p.send(msg(T.CREATE_QUEUE, "c1", "q1", headers={
        "deliveryMode": "PriorityBased", "maxQueueSize": "5", "messageTtl": "60000",
        "enableDeadLetterQueue": "true", "maxRetryAttempts": "2"}))
    assert (a.type, a.id, a.queue) == (T.CREATE_QUEUE, "c1", "q1")
    [err] = p.send(msg(T.CREATE_QUEUE, "c2", "q1"))
    assert (err.id, err.error_code) == ("c2", "QUEUE_EXISTS")
    [info] = p.send(msg(T.QUEUE_INFO, "i", "q1"))
    assert {k: info.payload[k] for k in ("name", "messageCount", "subscriberCount", "deliveryMode",
                                          "maxSize", "messageTtl", "enableDeadLetterQueue",
                                          "maxRetryAttempts")} == {
        "name": "q1", "messageCount": 0, "subscriberCount": 0, "deliveryMode": "PriorityBased",
        "maxSize": 5, "messageTtl": 60000, "enableDeadLetterQueue": True, "maxRetryAttempts": 2}
    assert info.payload["createdAt"].endswith("Z")
    [err] = p.send(msg(T.QUEUE_INFO, "i2", "nope"))
    assert (err.id, err.error_code) == ("i2", "QUEUE_NOT_FOUND")
    [err] = p.send(msg(T.DELETE_QUEUE, "d1", "nope"))
    assert err.error_code == "QUEUE_NOT_FOUND"
    [a] = p.send(msg(T.DELETE_QUEUE, "d2", "q1"))
    assert (a.type, a.queue) == (T.DELETE_QUEUE, "q1")
    [a] = p.send(msg(T.LIST_QUEUES, "l"))
    assert a.payload == []


def test_create_queue_real_payload(state):
    p = ready(state, "vibemq-1.8")
    p.send(msg(T.CREATE_QUEUE, "c1", "q2", {"mode": 1, "maxQueueSize": 7, "messageTtl": "00:01:30",
                                            "overflowStrategy": 1}))
    [again] = p.send(msg(T.CREATE_QUEUE, "c2", "q2"))            # exists: answered anyway
    assert again.type == T.CREATE_QUEUE
    [info] = p.send(msg(T.QUEUE_INFO, "i", "q2"))
    assert info.payload["deliveryMode"] == 1 and info.payload["maxSize"] == 7
    assert info.payload["messageTtl"] == "00:01:30" and info.payload["overflowStrategy"] == 1
    assert "deadLetterQueueName" not in info.payload


@pytest.mark.parametrize("profile,code", [("document", "INVALID_MESSAGE"), ("vibemq-1.8", "INVALID_PAYLOAD")])
@pytest.mark.parametrize("options", [{"deliveryMode": "Sideways"}, {"maxQueueSize": "0"},
                                     {"messageTtl": "-5"}, {"enableDeadLetterQueue": "maybe"},
                                     {"maxRetryAttempts": "x"}])
def test_create_queue_bad_options(state, profile, code, options):
    p = ready(state, profile)
    [err] = p.send(msg(T.CREATE_QUEUE, "c", "q3", headers=options))
    assert (err.id, err.error_code) == ("c", code)
    [err] = p.send(msg(T.CREATE_QUEUE, "c", "q3", [1, 2]))
    assert err.error_code == code


def test_queue_not_found_without_auto_create():
    state = BrokerState(StateConfig(auto_create=False))
    p = ready(state)
    for kind in (T.PUBLISH, T.SUBSCRIBE):
        [err] = p.send(msg(kind, "r", "missing"))
        assert (err.id, err.error_code) == ("r", "QUEUE_NOT_FOUND")


def test_server_error_at_the_queue_limit():
    state = BrokerState(StateConfig(max_queues=1))
    p = ready(state)
    p.send(msg(T.CREATE_QUEUE, "c", "one"))
    for kind in (T.CREATE_QUEUE, T.PUBLISH, T.SUBSCRIBE):
        [err] = p.send(msg(kind, "r", "two"))
        assert (err.id, err.error_code) == ("r", "SERVER_ERROR")


# -- delivery modes -------------------------------------------------------------------------

def deliveries(peer):
    return [f for f in peer.send() if f.type == T.DELIVER]


def setup_queue(state, mode, n_subs=2, **headers):
    admin = ready(state)
    admin.send(msg(T.CREATE_QUEUE, "c", "q", headers={"deliveryMode": mode, **headers}))
    subs = [ready(state) for _ in range(n_subs)]
    for s in subs:
        s.send(msg(T.SUBSCRIBE, "s", "q"))
    return admin, subs


def test_round_robin(state):
    admin, (a, b) = setup_queue(state, "RoundRobin")
    admin.send(*(msg(T.PUBLISH, f"m{i}", "q", i) for i in range(4)))
    da, db = deliveries(a), deliveries(b)
    assert [d.id for d in da] == ["m0", "m2"] and [d.id for d in db] == ["m1", "m3"]
    assert da[0].headers == {"priority": "Normal", "deliveryAttempts": "1"}


def test_fan_out_with_ack_tracks_each_subscriber(state):
    admin, (a, b) = setup_queue(state, "FanOutWithAck")
    admin.send(msg(T.PUBLISH, "m", "q", 1))
    assert [d.id for d in deliveries(a)] == ["m"] and [d.id for d in deliveries(b)] == ["m"]
    a.send(msg(T.ACK, "x", headers={"messageId": "m"}))
    a.tick(10.0)
    assert deliveries(a) == []
    [again] = deliveries(b)
    assert (again.id, again.header("deliveryAttempts")) == ("m", "2")


def test_fan_out_without_ack_forgets(state):
    admin, (a, b) = setup_queue(state, "FanOutWithoutAck")
    admin.send(msg(T.PUBLISH, "m", "q", 1))
    assert len(deliveries(a)) == len(deliveries(b)) == 1
    assert state.next_deadline() is None
    assert state.inflight == {}


def test_priority_based(state):
    admin = ready(state)
    admin.send(msg(T.CREATE_QUEUE, "c", "q", headers={"deliveryMode": "PriorityBased"}))
    for i, prio in enumerate(["Low", "normal", "Critical", "High", "2", None, "bogus"]):
        admin.send(msg(T.PUBLISH, f"m{i}", "q", i, {"priority": prio} if prio else None))
    s = ready(state)
    got = [f for f in s.send(msg(T.SUBSCRIBE, "s", "q")) if f.type == T.DELIVER]
    assert [d.id for d in got] == ["m2", "m3", "m4", "m1", "m5", "m6", "m0"]
    assert [d.header("priority") for d in got][:3] == ["Critical", "High", "High"]   # normalised names


def test_backlog_follows_subscribe_ack(state):
    admin = ready(state)
    admin.send(msg(T.PUBLISH, "early", "q", 1))
    s = ready(state)
    out = s.send(msg(T.SUBSCRIBE, "s", "q"))
    assert [f.type for f in out] == [T.SUBSCRIBE_ACK, T.DELIVER]


def test_real_deliver_has_publisher_headers_only(state):
    s = ready(state, "vibemq-1.8")
    s.send(msg(T.SUBSCRIBE, "s", "q"))
    pub = ready(state, "vibemq-1.8")
    pub.send(msg(T.PUBLISH, "m1", "q", {"a": 1}, {"correlationId": "c9"}), msg(T.PUBLISH, "m2", "q"))
    got = deliveries(s)
    assert [(d.id, d.queue, d.payload, d.headers) for d in got] == [
        ("m1", "q", {"a": 1}, {"correlationId": "c9"}), ("m2", "q", None, None)]


# -- acks, redelivery, dead letters, TTL ---------------------------------------------------

def test_ack_forms_and_redelivery(state):
    admin, (a,) = setup_queue(state, "RoundRobin", 1)
    admin.send(msg(T.PUBLISH, "m1", "q", 1), msg(T.PUBLISH, "m2", "q", 2))
    assert len(deliveries(a)) == 2
    assert a.send(msg(T.ACK, "m1")) == []                          # real form: own id
    assert a.send(msg(T.ACK, "a", headers={"messageId": "m2"})) == []   # document form
    assert a.send(msg(T.ACK, "nothing")) == []                     # unknown: no answer
    assert state.inflight == {} and state.next_deadline() is None


def test_retries_then_dead_letter(state):
    admin, (a,) = setup_queue(state, "RoundRobin", 1, enableDeadLetterQueue="true", maxRetryAttempts="3")
    admin.send(msg(T.PUBLISH, "m", "q", {"v": 1}))
    assert [d.header("deliveryAttempts") for d in deliveries(a)] == ["1"]
    assert state.next_deadline() == 10.0                            # ack timeout
    assert a.tick(9.9) == []
    [d2] = a.tick(10.0)
    assert d2.header("deliveryAttempts") == "2"
    assert state.next_deadline() == 12.0                            # base 1 s * 2**1
    [d3] = a.tick(12.0)
    assert d3.header("deliveryAttempts") == "3"
    assert state.next_deadline() == 16.0                            # 4 s (capped at 4)
    assert a.tick(16.0) == []
    [info] = admin.send(msg(T.QUEUE_INFO, "i", "q.dlq"))
    assert info.payload["messageCount"] == 1
    d = ready(state)
    [_, dead] = d.send(msg(T.SUBSCRIBE, "s", "q.dlq"))
    assert (dead.id, dead.queue, dead.payload) == ("m", "q.dlq", {"v": 1})
    assert dead.header("x-dead-letter-reason") == "MaxRetriesExceeded"
    assert dead.header("x-original-queue") == "q"


def test_retries_exhausted_without_dlq_drop(state):
    admin, (a,) = setup_queue(state, "RoundRobin", 1, maxRetryAttempts="1")
    admin.send(msg(T.PUBLISH, "m", "q", 1))
    deliveries(a)
    assert a.tick(10.0) == []
    assert state.inflight == {} and "q.dlq" not in state.queues


def test_connection_loss_requeues(state):
    admin, (a, b) = setup_queue(state, "RoundRobin")
    admin.send(msg(T.PUBLISH, "m0", "q", 0))
    assert [d.id for d in deliveries(a)] == ["m0"]
    a.session.connection_lost()
    [again] = deliveries(b)
    assert (again.id, again.header("deliveryAttempts")) == ("m0", "2")


def test_ttl_expiry_to_dlq(state):
    admin = ready(state)
    admin.send(msg(T.CREATE_QUEUE, "c", "t", headers={"messageTtl": "500", "enableDeadLetterQueue": "true",
                                                      "deadLetterQueueName": "t-dead"}))
    admin.send(msg(T.PUBLISH, "m", "t", 1), now=0.0)
    admin.send(msg(T.PUBLISH, "n", "t", 2), now=0.3)
    assert state.next_deadline() == 0.5
    admin.tick(0.5)
    [info] = admin.send(msg(T.QUEUE_INFO, "i", "t"), now=0.5)
    assert info.payload["messageCount"] == 1
    assert state.next_deadline() == pytest.approx(0.8)
    [info] = admin.send(msg(T.QUEUE_INFO, "i", "t-dead"), now=0.6)
    assert info.payload["messageCount"] == 1
    s = ready(state)
    out = s.send(msg(T.SUBSCRIBE, "s", "t"), now=0.9)        # expired before anyone took it
    assert [f.type for f in out] == [T.SUBSCRIBE_ACK]


def test_overflow_strategies(state):
    p = ready(state)
    p.send(msg(T.CREATE_QUEUE, "c", "old", headers={"maxQueueSize": "2"}))
    p.send(msg(T.CREATE_QUEUE, "c", "new", headers={"maxQueueSize": "2", "overflowStrategy": "DropNewest"}))
    p.send(msg(T.CREATE_QUEUE, "c", "dlq", headers={"maxQueueSize": "1", "overflowStrategy": "RedirectToDlq",
                                                    "enableDeadLetterQueue": "true"}))
    for q in ("old", "new", "dlq"):
        for i in range(3):
            [ack] = p.send(msg(T.PUBLISH, f"{q}{i}", q, i))
            assert ack.type == T.PUBLISH_ACK                      # acked even when refused
    s = ready(state)
    got = {}
    for q in ("old", "new", "dlq", "dlq.dlq"):
        got[q] = [f.id for f in s.send(msg(T.SUBSCRIBE, "s", q)) if f.type == T.DELIVER]
    assert got == {"old": ["old1", "old2"], "new": ["new0", "new1"], "dlq": ["dlq0"],
                   "dlq.dlq": ["dlq1", "dlq2"]}


def test_inflight_bound_holds_messages_back():
    state = BrokerState(StateConfig(max_inflight=2))
    admin, (a,) = setup_queue(state, "RoundRobin", 1)
    admin.send(*(msg(T.PUBLISH, f"m{i}", "q", i) for i in range(5)))
    assert [d.id for d in deliveries(a)] == ["m0", "m1"]
    [d] = [f for f in a.send(msg(T.ACK, "m0")) if f.type == T.DELIVER]
    assert d.id == "m2"


def test_delete_queue_unsubscribes(state):
    admin, (a,) = setup_queue(state, "RoundRobin", 1)
    admin.send(msg(T.DELETE_QUEUE, "d", "q"))
    admin.send(msg(T.PUBLISH, "m", "q", 1))                         # recreated implicitly
    assert deliveries(a) == []


# -- limits ---------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["document", "vibemq-1.8"])
def test_rate_limit(state, profile):
    p = Peer(state, profile, max_messages_per_second=3)
    out = p.send(*(msg(T.PING, f"p{i}") for i in range(5)), now=0.0)
    assert [f.type for f in out] == [T.PONG] * 3 + [T.ERROR] * 2
    assert {f.error_code for f in out[3:]} == {"RATE_LIMITED"}
    assert ([f.id for f in out[3:]] == ["p3", "p4"]) == (profile == "document")   # real: new ids
    assert [f.type for f in p.send(msg(T.PING, "late"), now=1.01)] == [T.PONG]


def test_connection_limit():
    state = BrokerState(StateConfig(max_connections=1))
    first = Peer(state)
    second = Peer(state)
    assert second.session.closed and second.session.rejected
    [err] = second.raw(b"")
    assert err.error_code == "CONNECTION_LIMIT"
    pushed = []
    third = VibeSession(state)
    third.attach(pushed.append, lambda: pushed.append("closed"))
    assert codec.Decoder().feed(pushed[0][0])[0].error_code == "CONNECTION_LIMIT" and pushed[1] == "closed"
    first.session.connection_lost()
    assert not Peer(state).session.closed


def test_protocol_1_0_framing(state):
    p = Peer(state, "vibemq-1.0")
    data = codec.encode(msg(T.CONNECT, "c", headers={**AUTH, "supported-compression": "gzip"}), "vibemq-1.0")
    out = b"".join(p.session.receive(data, 0.0))
    [ack] = codec.Decoder(profile="vibemq-1.0").feed(out)
    assert ack.type == T.CONNECT_ACK and ack.headers is None
