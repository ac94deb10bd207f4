"""The RabbitMQ Stream state machine's probes (strategies/rabbitmq_stream_machine.py): each
(phase x client command) pair of :data:`MATRIX` sent on a connection of its own brought to that
phase, and what the answer must be (the handshake's own order answered, anything else before
Open ending the connection, after Open Close, an unknown key and a malformed frame ending it).
A mixin of :class:`~rabbitmq_stream_machine.StreamMachine`, which has the driver, ``should``,
``probe_sweep`` and ``_record``."""
from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from wirecheck.conformance.report.verdicts import Breach
from wirecheck.reference_impl.rabbitmq_stream import codec
from wirecheck.reference_impl.rabbitmq_stream.constants import Code

from .rabbitmq_stream_drivers import (AFTER_SASL_HANDSHAKE, HANDSHAKE, OPEN, OPENING, PHASES, TUNING, SessionDriver,
                                      probe_frame)
from .state_matrix import MALFORMED, UNKNOWN, Matrix, holds

#: The document's client-to-server commands (its keys 1-25 less the server's 3, 4, 8, 16).
#: Keys 26-30 are newer than the document: ExchangeCommandVersions, sent by the SHOULD-level
#: machine, is not counted.
COMMANDS = ("DeclarePublisher", "Publish", "QueryPublisherSequence", "DeletePublisher", "Subscribe",
            "Credit", "StoreOffset", "QueryOffset", "Unsubscribe", "Create", "Delete", "Metadata",
            "PeerProperties", "SaslHandshake", "SaslAuthenticate", "Tune", "Open", "Close",
            "Heartbeat", "Route", "Partitions")
MATRIX = Matrix("rabbitmq-stream", PHASES, COMMANDS + (UNKNOWN, MALFORMED))
# Not a state of the matrix: "closed" (after Close, a refused handshake or a protocol error the
# server has ended the connection; nothing sent afterwards is read).
HANDSHAKE_COMMANDS = ("PeerProperties", "SaslHandshake", "SaslAuthenticate", "Tune", "Open")
#: The handshake's own order: (phase, command) -> the answers it gets.
IN_ORDER = {(HANDSHAKE, "PeerProperties"): 1, (HANDSHAKE, "SaslHandshake"): 1,
            (HANDSHAKE, "SaslAuthenticate"): 2, (TUNING, "Tune"): 0, (OPENING, "Open"): 1}
#: The rule of a handshake command a probe expects answered, by the command.
PROBE_ANSWERED = {"PeerProperties": "RMQS-HS-001", "SaslHandshake": "RMQS-HS-002", "SaslAuthenticate": "RMQS-HS-003",
                  "Tune": "RMQS-HS-004", "Open": "RMQS-HS-005"}


class ProbeRules:
    """The machine's ``probe`` rule and its checks."""

    @precondition(lambda self: getattr(self.driver, "probe", None) is not None)
    @rule(phase=st.sampled_from(PHASES), first=st.integers(0, 2**16))
    def probe(self, phase, first):
        """Commands of one row of the matrix, each on a new connection brought to ``phase``
        (all of them, or ``probe_sweep`` from ``first`` on):

        - in the handshake's order: answered (RMQS-HS-001..005); out of it (``should``):
          PeerProperties and SaslHandshake are answered in any phase before Open, a second
          SaslAuthenticate, a Tune or an Open out of turn end the connection (SPEC_NOTES.md);
        - before Open, any other command, an unknown key: not answered (or Close(13)), the
          connection ends (RMQS-HS-006); a malformed frame too (``should``, RMQS-FRAME-013);
        - after Open: Close gets CloseResponse(1) and the end (RMQS-CLOSE-001); an unknown key
          Close(13) and the end (RMQS-FRAME-009); with ``should``, a malformed frame (-FRAME-013)
          and a handshake command (-HS-014) too. The other commands are the machine's rules.
        """
        kinds = self._probe_kinds(phase)
        if self.probe_sweep is not None:
            kinds = (kinds * 2)[first % len(kinds):][:self.probe_sweep]
        for kind in kinds:
            self._probe(phase, kind)

    def _probe_kinds(self, phase: str) -> list:
        if phase == OPEN:
            return ["Close", UNKNOWN] + ([MALFORMED, *HANDSHAKE_COMMANDS] if self.should else [])
        out = [k for k in MATRIX.frames if k not in HANDSHAKE_COMMANDS and k != MALFORMED]
        lenient = phase in (TUNING, OPENING) and not isinstance(self.driver, SessionDriver)
        if lenient:
            # Once the server's Tune has named the interval, a Heartbeat, or a handshake step
            # again (a second TuneResponse): the document does not say these end a connection
            # that has not opened yet, and RabbitMQ 3.10 keeps waiting for Open. Over the wire
            # they are not probed; the reference session's refusal is checked in memory.
            out = [k for k in out if k != "Heartbeat"]
        out += [k for k in HANDSHAKE_COMMANDS if (phase, k) in IN_ORDER or (self.should and not lenient)]
        return out + ([MALFORMED] if self.should else [])

    def _probe(self, phase: str, kind: str) -> None:
        d = self.driver
        cid = 77
        count = IN_ORDER.get((phase, kind))
        if count is None and kind in ("PeerProperties", "SaslHandshake") and phase != OPEN:
            count = 1                                     # answered before Open (SPEC_NOTES.md)
        closes = count is None
        self._record(phase, kind)
        after = {(HANDSHAKE, "SaslAuthenticate"): TUNING, (TUNING, "Tune"): OPENING,
                 (OPENING, "Open"): OPEN}.get((phase, kind), phase)
        if kind == "SaslHandshake" and phase != OPEN:
            after = AFTER_SASL_HANDSHAKE                  # the barrier must suit the SASL step
        answers, closed = d.probe(phase, probe_frame(kind, cid, d.user, d.password, d.vhost), closes, after)
        what = f"{kind} on a connection in phase {phase}: got {answers} ({'closed' if closed else 'open'})"
        if not closes:
            rule = PROBE_ANSWERED.get(kind)
            holds(not closed and len(answers) == count, f"{what}, expected {count} answer(s), open", rule)
            codes = [getattr(f, "code", Code.OK) for f in answers]
            holds(all(c == Code.OK for c in codes) and all(getattr(f, "correlation_id", cid) == cid for f in answers),
                  f"{what}: not code 1", rule)
            return
        if phase != OPEN and kind not in HANDSHAKE_COMMANDS and kind != MALFORMED:
            # another command before Open: the document's sentence binds the client, so what
            # the server does is the kit's reading (RMQS-HS-006, SHOULD), charged to it alone
            if not closed or not all(isinstance(f, codec.Close) and f.code == Code.UNKNOWN_FRAME for f in answers):
                raise Breach(f"{what}, expected no answer (or Close(13)) and the end", "RMQS-HS-006")
            return
        rule = ("RMQS-FRAME-013" if kind == MALFORMED else None if phase != OPEN else
                "RMQS-CLOSE-001" if kind == "Close" else "RMQS-FRAME-009" if kind == UNKNOWN else "RMQS-HS-014")
        holds(closed, f"{what}: the connection must end", rule)
        if phase == OPEN and kind == "Close":
            holds(answers == [codec.CloseResponse(cid, Code.OK)], f"{what}, expected CloseResponse({cid}, 1)", rule)
        elif phase == OPEN and (kind == UNKNOWN or self.should):
            holds([(type(f), getattr(f, "code", None)) for f in answers] == [(codec.Close, Code.UNKNOWN_FRAME)],
                  f"{what}, expected Close(13)", rule)
        else:
            holds(all(isinstance(f, codec.Close) and f.code == Code.UNKNOWN_FRAME for f in answers),
                  f"{what}, expected no answer (or Close(13))", rule)
