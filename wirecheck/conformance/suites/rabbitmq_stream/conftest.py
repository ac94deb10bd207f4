"""Helpers of the RabbitMQ Stream suite: connections that run the handshake (credentials
from the profile), the Metadata barrier, streams with unique names that are deleted after
the test (tests never share state, so they run in any order and under xdist)."""
from __future__ import annotations

import itertools
import os
import socket
import time
import uuid

import pytest

from wirecheck.conformance.target.connection import (Budget, BudgetSpent, Connection, TargetClosed, TargetError, TargetTimeout,
                               Transcript)
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.chunk import SubBatchEntry
from wirecheck.reference_impl.rabbitmq_stream.codec import (Close, CloseResponse, Create, CreateResponse, Delete, Heartbeat,
                                                  DeleteSuperStream, DeclarePublisher,
                                                  DeclarePublisherResponse, Deliver,
                                                  Metadata, MetadataResponse, Open, OpenResponse,
                                                  PeerProperties, PeerPropertiesResponse, Publish,
                                                  PublishConfirm, PublishedMessage, SaslAuthenticate,
                                                  SaslAuthenticateResponse, SaslHandshake,
                                                  SaslHandshakeResponse, Subscribe, SubscribeResponse,
                                                  Tune, TuneResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import RESPONSE_BIT, Code, Key, OffsetType

#: How far a connection gets before the test takes over ("Authentication" sequence).
STAGES = ("tcp", "peer_properties", "sasl_handshake", "authenticated", "tuned", "open")

#: The suite's own decoder limit: what the *server* sends (a Deliver of a big chunk) is not
#: bounded by the frame_max the suite asked for (RabbitMQ 3.10 ignores it, SPEC_NOTES.md).
MAX_INCOMING = 64 * 1024 * 1024


def suite_decoder() -> codec.Decoder:
    """The reference decoder, told that the bytes come from a server (so that Route and
    Partitions answers without the response bit, as RabbitMQ 3.10 sends them, decode as
    responses and the tests can judge them against the profile)."""
    return codec.Decoder(codec.StreamConfig(max_frame_size=MAX_INCOMING), origin="server")


class Rmqs:
    """Suite-side vocabulary for RabbitMQ Stream; does no I/O until a test calls it."""

    def __init__(self, target) -> None:
        self.target = target
        self.profile = target.profile
        creds = target.profile.credentials
        self.user = creds.get("user", "guest")
        self.password = creds.get("password", "guest")
        self.vhost = creds.get("vhost", "/")
        # Distinct correlation ids per worker make transcripts easy to tell apart.
        self._cids = itertools.count(0x1000 + (os.getpid() % 1000) * 0x10000)
        self.created: list[str] = []
        self.created_super: list[str] = []

    # -- names and ids ---------------------------------------------------------------------

    def cid(self) -> int:
        return next(self._cids)

    def name(self, label: str = "s") -> str:
        return f"wirecheck-{label}-{uuid.uuid4().hex[:12]}"

    def plain(self, user: str | None = None, password: str | None = None) -> bytes:
        """PLAIN initial response (SPEC_NOTES.md: ``\\0user\\0password``)."""
        user = self.user if user is None else user
        password = self.password if password is None else password
        return b"\0" + user.encode() + b"\0" + password.encode()

    # -- connections -----------------------------------------------------------------------

    def connect(self, stage: str = "open", *, heartbeat: int | None = None,
                frame_max: int | None = None, tune_key: int = Key.TUNE | RESPONSE_BIT,
                name: str = "", register: bool = True) -> Connection:
        """A connection taken through the handshake up to ``stage`` (see STAGES). The Tune
        answer echoes the server's offer unless ``heartbeat``/``frame_max`` are given; the
        server's Tune is kept as ``conn.server_tune``."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        conn = self.target.connect(name) if register else self._private_connection(name)
        conn.decoder = suite_decoder()
        # "Heartbeat": the server may send one at any moment; a test asks for it by name
        # (Connection.expect) or with keep=True.
        conn.unsolicited, conn.unsolicited_what = (Heartbeat,), "Heartbeats"
        conn.server_tune = None
        if stage == "tcp":
            return conn
        cid = self.cid()
        conn.send(PeerProperties(cid, {"product": "wirecheck", "connection_name": name or "suite"}))
        conn.expect(PeerPropertiesResponse, correlation_id=cid, code=Code.OK)
        if stage == "peer_properties":
            return conn
        cid = self.cid()
        conn.send(SaslHandshake(cid))
        mechanisms = conn.expect(SaslHandshakeResponse, correlation_id=cid, code=Code.OK).mechanisms
        if "PLAIN" not in mechanisms:
            raise TargetError(f"SaslHandshake offers {list(mechanisms)}, no PLAIN")
        if stage == "sasl_handshake":
            return conn
        cid = self.cid()
        conn.send(SaslAuthenticate(cid, "PLAIN", self.plain()))
        conn.expect(SaslAuthenticateResponse, correlation_id=cid, code=Code.OK)
        conn.server_tune = conn.expect(Tune)
        if stage == "authenticated":
            return conn
        fm = conn.server_tune.frame_max if frame_max is None else frame_max
        hb = conn.server_tune.heartbeat if heartbeat is None else heartbeat
        conn.send(TuneResponse(fm, hb) if tune_key & RESPONSE_BIT else Tune(fm, hb))
        if stage == "tuned":
            return conn
        cid = self.cid()
        conn.send(Open(cid, self.vhost))
        conn.expect(OpenResponse, correlation_id=cid, code=Code.OK)
        return conn

    def _private_connection(self, name: str) -> Connection:
        """A connection the test's report does not show (clean-up after the test)."""
        tgt = self.target
        sock = socket.create_connection((tgt.host, tgt.port), timeout=tgt.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Its own budget: a clean-up skipping frames must end even if the target never stops sending.
        return Connection(sock, tgt.spec, tgt.timeout, Transcript(name or "clean-up"),
                          budget=Budget(10 * tgt.timeout))

    def barrier(self, conn, what: str = "") -> None:
        """Prove that nothing was answered to the frames sent before: a Metadata query sent
        now must get its response as the very next frame (DESIGN.md: a barrier, never a
        sleep)."""
        cid = self.cid()
        conn.send(Metadata(cid, ()))
        frame = conn.recv(expecting=f"MetadataResponse({cid}) as barrier")
        if not (isinstance(frame, MetadataResponse) and frame.correlation_id == cid):
            raise TargetError(f"expected no answer{' to ' + what if what else ''}, but got "
                              f"{describe(frame)} before the barrier's MetadataResponse")

    def recv_exact(self, conn, n: int, what: str) -> bytes:
        """``n`` bytes straight from the socket, bypassing the decoder (the framing tests
        check sizes with their own arithmetic). Bounded by the receive timeout."""
        buf = bytearray()
        deadline = time.monotonic() + conn.timeout
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                conn.transcript.add("--", bytes(buf), f"timeout after {len(buf)} of {n} bytes ({what})")
                raise TargetTimeout(f"no {what} within {conn.timeout:g} s ({len(buf)} of {n} bytes)")
            conn.sock.settimeout(left)
            try:
                data = conn.sock.recv(n - len(buf))
            except socket.timeout:
                continue
            except OSError:
                data = b""
            if not data:
                conn.transcript.add("<-", bytes(buf), "connection closed by target")
                raise TargetClosed(f"target closed the connection ({len(buf)} of {n} bytes of {what})")
            buf += data
        conn.transcript.add("<-", bytes(buf), f"raw: {what}")
        return bytes(buf)

    # -- closing -----------------------------------------------------------------------------

    def expect_close(self, conn, code: int, what: str) -> Close:
        """The server must send Close(code); the suite answers it (the server waits for the
        answer, "Close ... Expects response") and the connection must then end."""
        close = conn.expect(Close, code=code)
        self._answer_close(conn, close)
        conn.expect_closed(reason=f"after Close({code}) for {what}")
        return close

    def expect_refused(self, conn, what: str, code: int = Code.UNKNOWN_FRAME) -> None:
        """The connection must end without any other answer: either straight away or after
        Close(code) (answered by the suite). RabbitMQ does the former before Open and for some
        malformed frames, the latter after Open."""
        try:
            frame = conn.recv(expecting=f"Close({code}) or the end of the connection ({what})")
        except TargetClosed:
            return
        except TargetTimeout:
            raise TargetTimeout(f"the connection stayed open and silent after {what}; it must "
                                f"end (after Close({code}) if anything is sent)") from None
        if not isinstance(frame, Close) or frame.code != code:
            raise TargetError(f"expected Close({code}) or the end of the connection after {what}, "
                              f"got {describe(frame)}")
        self._answer_close(conn, frame)
        conn.expect_closed(reason=f"after Close({code}) for {what}")

    @staticmethod
    def _answer_close(conn, close: Close) -> None:
        try:
            conn.send(CloseResponse(close.correlation_id, Code.OK))
        except TargetClosed:          # the server need not wait for the answer
            pass

    def expect_routing_answer(self, conn, response_class, cid: int):
        """The answer to Route or Partitions and whether it had the response bit (RabbitMQ
        3.10 sends these with the request key; the caller compares with the profile)."""
        frame = conn.expect(response_class, correlation_id=cid)
        return frame, frame.response_bit

    # -- streams -----------------------------------------------------------------------------

    def create(self, conn, label: str = "s", arguments: dict | None = None, name: str | None = None) -> str:
        name = self.name(label) if name is None else name
        cid = self.cid()
        conn.send(Create(cid, name, dict(arguments or {})))
        conn.expect(CreateResponse, correlation_id=cid, code=Code.OK)
        self.created.append(name)
        return name

    def metadata(self, conn, streams) -> MetadataResponse:
        cid = self.cid()
        conn.send(Metadata(cid, tuple(streams)))
        return conn.expect(MetadataResponse, correlation_id=cid)

    def cleanup(self) -> None:
        """Delete the streams the test created, on a connection of its own; best effort (the
        target may be gone, or the test deleted them)."""
        if not (self.created or self.created_super):
            return
        conn = None
        try:
            conn = self.connect(register=False, name="clean-up")
            requests = [DeleteSuperStream(self.cid(), n) for n in self.created_super]
            requests += [Delete(self.cid(), n) for n in self.created]
            for request in requests:
                cid = request.correlation_id
                conn.send(request)
                while True:     # MetadataUpdate of our own delete is not for this connection
                    frame = conn.recv(expecting="DeleteResponse")
                    if getattr(frame, "correlation_id", None) == cid:
                        break
        except (AssertionError, OSError, BudgetSpent):      # the test's budget may be spent
            pass
        finally:
            self.created.clear()
            self.created_super.clear()
            if conn is not None:
                conn.close()

    # -- publishing --------------------------------------------------------------------------

    def declare(self, conn, publisher_id: int, stream: str, reference: str = "") -> None:
        cid = self.cid()
        conn.send(DeclarePublisher(cid, publisher_id, reference, stream))
        conn.expect(DeclarePublisherResponse, correlation_id=cid, code=Code.OK)

    def publish(self, conn, publisher_id: int, messages, version: int = 1) -> list[int]:
        """Send one Publish and wait until every publishing id is confirmed (RabbitMQ may
        split the confirms over several frames). ``messages``: PublishedMessage objects."""
        messages = tuple(messages)
        conn.send(Publish(publisher_id, messages, version))
        ids = [m.publishing_id for m in messages]
        self.await_confirms(conn, publisher_id, ids)
        return ids

    def await_confirms(self, conn, publisher_id: int, ids) -> None:
        pending = list(ids)
        while pending:
            frame = conn.recv(expecting=f"PublishConfirm({publisher_id}) of {pending[:5]}...")
            if not isinstance(frame, PublishConfirm) or frame.publisher_id != publisher_id:
                raise TargetError(f"waiting for the confirms of {pending}, got {describe(frame)}")
            for pid in frame.publishing_ids:
                if pid not in pending:
                    raise TargetError(f"publishing id {pid} confirmed twice or never published "
                                      f"(still pending: {pending})")
                pending.remove(pid)

    def publish_chunks(self, conn, publisher_id: int, groups, first_id: int = 1) -> None:
        """Publish each group as a chunk of its own, waiting for its confirm before the next:
        one message, or several as one sub-batch entry. (RabbitMQ may spread the messages of
        one Publish over several chunks; a sub-batch is one entry, hence one chunk.)"""
        for pid, group in enumerate(groups, start=first_id):
            body = group[0] if len(group) == 1 else SubBatchEntry.of(list(group))
            self.publish(conn, publisher_id, [PublishedMessage(pid, body)])

    def stream_with_chunks(self, groups, label: str = "s"):
        """A new stream holding ``groups`` (one chunk each, see publish_chunks); returns
        (name, publisher connection with publisher 1 declared, publishing ids 1..len(groups)
        used)."""
        pub = self.connect(name="publisher")
        name = self.create(pub, label)
        self.declare(pub, 1, name)
        self.publish_chunks(pub, 1, groups)
        return name, pub

    # -- consuming ---------------------------------------------------------------------------

    def subscribe(self, conn, sub_id: int, stream: str, offset_type: int = OffsetType.FIRST,
                  offset: int | None = None, credit: int = 10, properties: dict | None = None) -> None:
        cid = self.cid()
        conn.send(Subscribe(cid, sub_id, stream, int(offset_type), offset, credit, dict(properties or {})))
        conn.expect(SubscribeResponse, correlation_id=cid, code=Code.OK)

    def deliveries(self, conn, sub_id: int, count: int) -> list[Deliver]:
        out = []
        for i in range(count):
            frame = conn.recv(expecting=f"Deliver #{i + 1} of {count} for subscription {sub_id}")
            if not isinstance(frame, Deliver) or frame.subscription_id != sub_id:
                raise TargetError(f"expected Deliver for subscription {sub_id}, got {describe(frame)}")
            out.append(frame)
        return out

    def messages_until(self, conn, sub_id: int, count: int) -> list[tuple[int, bytes]]:
        """(offset, body) of every message delivered until ``count`` messages have come."""
        got: list[tuple[int, bytes]] = []
        while len(got) < count:
            (frame,) = self.deliveries(conn, sub_id, 1)
            got.extend(messages_of(frame))
        return got


def messages_of(deliver) -> list[tuple[int, bytes]]:
    chunk = deliver.chunk
    return [(chunk.first_offset + i, body) for i, body in enumerate(chunk.messages())]


def describe(frame) -> str:
    d = codec.frame_to_dict(frame)
    kind = d.pop("type", "?")
    d = {k: v for k, v in d.items() if k not in ("chunk",)}
    return f"{kind}({', '.join(f'{k}={v!r}' for k, v in d.items())})"


#: Keys no version of the protocol defines.
UNKNOWN_KEYS = (0x0000, 31, 0x0042, 0x1234, 0x7FFF)


def pytest_generate_tests(metafunc) -> None:
    """``unknown_key``: the keys a target must treat as unknown, which depend on the profile
    (RabbitMQ 3.10 knows keys 1-25 only: for it 26-30 are unknown like any other)."""
    if "unknown_key" not in metafunc.fixturenames:
        return
    from wirecheck.conformance.profiles import load_profile
    from wirecheck.reference_impl.core import registry
    profile = load_profile(registry.get("rabbitmq-stream"), metafunc.config.getoption("wirecheck_profile"))
    keys = list(UNKNOWN_KEYS)
    if not profile.feature("keys_26_30"):
        keys += range(26, 31)
    metafunc.parametrize("unknown_key", keys, ids=[f"0x{k:04x}" for k in keys])


@pytest.fixture
def rmqs(target):
    helper = Rmqs(target)
    yield helper
    helper.cleanup()


raw = codec.encode_raw
