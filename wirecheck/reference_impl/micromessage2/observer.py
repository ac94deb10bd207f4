"""The Micromessage2 observer (micromessage2.md; errata and the real implementation from
SPEC_NOTES.md, "Micromessage2"): both sides of a recorded conversation checked against the
document, sans-IO (times are the capture's).

What it checks, each rule with its catalogue ID (conformance/requirements/micromessage2.py):

- **framing**: a decode error is the sender's breach; which rule it broke depends on where the
  direction was (its handshake, or frames) and on the error (:data:`HANDSHAKE_FRAMING`,
  :data:`FRAMING`, :data:`FRAMING_BY_PART`).
- **handshake order** ("Handshake"): the server answers the client's offer (it never speaks
  first, MM2-HS-001) and sends no frame before the client's final handshake (MM2-HS-001); the
  client's final handshake comes after the reply (MM2-HS-001) and includes every extension the
  server required, or the client refuses with an ERROR instead (MM2-HS-008, MM2-HS-010).
- **refusals** (the "response codes" of a protocol that has none but ERROR): an offer or a
  final handshake of another major version, or an offer of a lower major the server does not
  speak, must be refused (ERROR, MM2-HS-004; a higher major may get the server's 1.x), a final
  handshake lacking a required extension too (MM2-HS-015, the kit's reading); whoever refuses
  disconnects "directly after" and sends nothing more (MM2-HS-004/-006/-007/-015 for the server,
  MM2-HS-010 for the client; MM2-HS-006 is waived for ``sharpmessaging``, whose server keeps
  the connection, SPEC_NOTES). The reply uses the lower minor version (MM2-HS-003, SHOULD;
  not for ``sharpmessaging``, which always answers 1.1).
- **sequence numbers** ("MESSAGE"): each side's MESSAGE/SEND frames count up by one
  (MM2-MSG-002) and wrap 65535 -> 1 (MM2-MSG-003); the first is 1 (MM2-MSG-007, SHOULD:
  SPEC_NOTES, the document does not fix it).
- **acks and windows** ("batch-ack", "Reliable messaging"): with ``ack``/``batch-ack`` agreed,
  a pusher never has more than the window unacked (MM2-ACK-002 ack, MM2-ACK-003 batch-ack
  with a count, MM2-ACK-004 batch-ack's default 10); an ack frame carries a 2-byte sequence
  number (MM2-ACK-007) and acknowledges every message up to it, across the wrap (MM2-ACK-005,
  MM2-ACK-008: how the observer releases them); an extension frame's id names an extension of
  the final handshake (MM2-HS-011).
- **json**: with ``json`` agreed, a client's SEND payloads are JSON (MM2-JSON-001, SHOULD).

Exchanges: the offer and the server's answer (its handshake or its refusal), and every
MESSAGE/SEND with the ack that acknowledged it (kind "Handshake" or "Message"; a cumulative
ack answers several, :meth:`frame` returns the pair of the message it names).

Not checked (passively undecidable, or no catalogue ID): which extensions a server supports
(MM2-HS-005/-007/-009/-014: server configuration), filters and routing (MM2-PS-*: other
connections), the ERROR a server owes a bad request (MM2-FRAME-003, MM2-CMD-002, MM2-ACK-009,
MM2-MSG-006, MM2-PS-001/-007, MM2-ERR-002: a passive observer cannot tell which of a
server's frames answers which request, nor whether a frame crossed the request on the wire),
ack timing (MM2-ACK-010), dotnet type frames (MM2-NET-001/-002: a message may reuse the last
type), and an ack for a number not in flight (no rule for the sender).
"""
from __future__ import annotations

import struct
from collections import deque
from typing import Optional

from ..core import strict_json
from ..core.errors import Category
from ..core.observer import C2S, S2C, Exchange, Observer
from .codec import Command, Error, ExtensionFrame, Handshake, Message
from .constants import ACK, BATCH_ACK, JSON, MAJOR_VERSION, SEQUENCE_FIRST, SEQUENCE_MAX
from .negotiation import WINDOW_KEYS, Refusal, _window
from .window import next_sequence

_SEQ = struct.Struct(">H")          # "batch-ack": the acked sequence number, u16
_OTHER = {C2S: S2C, S2C: C2S}
#: Handshakes each side sends ("Handshake": offer and final from the client, one reply).
HANDSHAKES = {C2S: 2, S2C: 1}

#: Decode errors while a direction is still in its handshake: the identity and the lengths
#: are the layout's (MM2-HS-001); anything in the extension lists is MM2-HS-013. By the part
#: the decoder says it was reading (FrameError.part: codec.py), then by category.
HANDSHAKE_FRAMING_BY_PART = {"identity": "MM2-HS-001"}
HANDSHAKE_FRAMING = {
    Category.BAD_VALUE: "MM2-HS-013",
    Category.BAD_ENCODING: "MM2-HS-013",
}
HANDSHAKE_FRAMING_DEFAULT = "MM2-HS-001"
#: Decode errors in frames, by the part the decoder says it was reading (FrameError.part),
#: then by category. A CONTINUED message over the kit's reassembly limit breaks no rule of the
#: document (it sets no message size): it maps to "" (not reported).
FRAMING_BY_PART = {
    "continued-limit": "",
    "continued": "MM2-FRAME-004",
    "error-text": "MM2-ERR-001",
    "command": "MM2-CMD-001",
    "properties": "MM2-MSG-004",
    "destination": "MM2-MSG-001",
}
FRAMING = {
    Category.UNKNOWN_TYPE: "MM2-FRAME-001",      # a flag bit the document does not define
    Category.BAD_VALUE: "MM2-FRAME-001",         # two frame-type bits
    Category.LENGTH_TOO_LARGE: "MM2-FRAME-006",  # a payload that should have been split
    Category.BAD_ENCODING: "MM2-MSG-001",
    Category.TRUNCATED: "MM2-FRAME-001",         # the sender closed inside a frame
}

def frame_requirement(error, in_handshake: bool) -> str:
    """The rule a frame that does not decode breaks, by the part the decoder was reading, then
    its category; ``in_handshake``: the sender's handshake was still due (the observer's and
    the live suites' reading: target.Connection.breach_of)."""
    category = Category(getattr(error.category, "value", error.category))
    if in_handshake:
        by_part, by_category, default = HANDSHAKE_FRAMING_BY_PART, HANDSHAKE_FRAMING, HANDSHAKE_FRAMING_DEFAULT
    else:
        by_part, by_category, default = FRAMING_BY_PART, FRAMING, ""
    requirement = by_part.get(error.part)
    return requirement if requirement is not None else by_category.get(category, default)


#: The window rule a pusher breaks, by the agreed ack extension ("Reliable messaging").
WINDOW_RULES = {ACK: "MM2-ACK-002", BATCH_ACK: "MM2-ACK-003"}
DEFAULT_WINDOW_RULE = "MM2-ACK-004"


class _Pusher:
    """One side as a pusher of MESSAGE/SEND frames: the last sequence number and what is in
    flight (sequence, conversation index, time) until the peer acks it."""
    __slots__ = ("last", "inflight")

    def __init__(self) -> None:
        self.last: Optional[int] = None
        self.inflight: deque[tuple[int, int, float]] = deque()


class MM2Observer(Observer):
    framing_requirements = {str(k): v for k, v in FRAMING.items()}

    #: What this observer judges on the client's frames, by type (``codec.frame_to_dict``'s
    #: "type"; conformance/clients/serve_check.py, ``exercised_requirements``; the :data:`FRAMING`
    #: rules come from ``framing_requirements``). Derived from the C2S checks of this module:
    #: the rules :meth:`_framing_requirement` gives a frame of that type that does not decode
    #: (a handshake: :data:`HANDSHAKE_FRAMING_BY_PART`, :data:`HANDSHAKE_FRAMING`; the ERROR
    #: text, a command, a message's CONTINUED pieces and properties: :data:`FRAMING_BY_PART`),
    #: and the ``violate`` calls that can name the client: the final handshake before the reply
    #: or without the required extensions (:meth:`_handshake`), sequence numbers, the json
    #: payload and the ack window (:meth:`_message`), extension ids and the ack's layout
    #: (:meth:`_extension`), and a client that refused the reply with an ERROR and still sends
    #: (MM2-HS-010: :meth:`_error` sets it, :meth:`frame` reports it). A rule is listed under a
    #: type when a frame of that type may break it, not when every such frame does (the window
    #: and json rules need the extension agreed, MM2-MSG-003 a wrap).
    client_rules = {
        "Handshake": ("MM2-HS-001", "MM2-HS-008", "MM2-HS-013"),
        "Message": ("MM2-MSG-002", "MM2-MSG-003", "MM2-MSG-007", "MM2-JSON-001", "MM2-ACK-002", "MM2-ACK-003",
                    "MM2-ACK-004", "MM2-FRAME-004", "MM2-MSG-004"),
        "Extension": ("MM2-HS-011", "MM2-ACK-007"),
        "Command": ("MM2-CMD-001",),
        "Error": ("MM2-ERR-001", "MM2-HS-010"),
    }

    def __init__(self, profile: Optional[str] = None) -> None:
        super().__init__(profile)
        self.real = profile == "sharpmessaging"
        self.handshakes = {C2S: 0, S2C: 0}
        self.offer: Optional[Handshake] = None
        self.offer_at: tuple[int, float] = (0, 0.0)
        self.offer_answered = False
        self.reply: Optional[Handshake] = None
        self.final: Optional[Handshake] = None
        self.final_pending = False      # the final came; neither side has sent anything since
        self.open = False
        #: Set while the server owes a refusal: (requirement, why).
        self.owed: Optional[tuple[str, str]] = None
        #: Per side, once it refused the handshake with an ERROR and must disconnect: the rule.
        self.refused: dict[str, Optional[str]] = {C2S: None, S2C: None}
        self.reported_after_refusal = {C2S: False, S2C: False}
        self.ext_names: tuple[str, ...] = ()
        self.ack_id: Optional[int] = None
        self.window: Optional[int] = None
        self.window_rule = ""
        self.json = False
        self.pushers = {C2S: _Pusher(), S2C: _Pusher()}
        #: Directions no longer decoded (the capture reader stops at a decode error): the acks
        #: that side sent afterwards are unknown, so the other side's window is not judged.
        self.blind: set[str] = set()

    # -- the capture reader's calls ------------------------------------------------------------

    def frame(self, direction, frame, index, time) -> Optional[Exchange]:
        if direction == C2S and self.refused[S2C] is not None:
            return None                 # the server refused and owes a disconnect: nothing to judge
        if self.refused[direction] is not None:
            # "send an ERROR frame and disconnect directly after": one report per side.
            if not self.reported_after_refusal[direction]:
                self.reported_after_refusal[direction] = True
                self.violate(self.refused[direction], direction, index,
                             f"{type(frame).__name__} after refusing the handshake with an ERROR "
                             "(the refusing side must disconnect)")
            return None
        if isinstance(frame, Handshake):
            return self._handshake(direction, frame, index, time)
        if isinstance(frame, Error):
            return self._error(direction, frame, index, time)
        if direction == S2C and not self._server_may_send(frame, index):
            return None
        if direction == C2S:
            self.final_pending = False
        if isinstance(frame, Message):
            self._message(direction, frame, index, time)
        elif isinstance(frame, ExtensionFrame):
            return self._extension(direction, frame, index, time)
        elif isinstance(frame, Command):
            pass                        # commands have no answer the document defines
        return None

    def malformed(self, direction, error, index, time) -> None:
        self.blind.add(direction)
        requirement = self._framing_requirement(direction, error)
        if requirement:
            self.violate(requirement, direction, index, f"{error.category}: {error.message}")

    def closed(self, direction, how, index, time) -> None:
        if direction == S2C and how in ("fin", "rst") and self.owed is not None:
            requirement, why = self.owed
            self.owed = None
            self.violate(requirement, S2C, index, f"{why}: the server disconnected without the "
                         "ERROR frame")

    # -- handshake -------------------------------------------------------------------------------

    def _handshake(self, direction, hs: Handshake, index, time) -> Optional[Exchange]:
        self.handshakes[direction] += 1
        if direction == S2C:
            return self._reply(hs, index, time)
        if self.offer is None:
            self._offer(hs, index, time)
            return None
        self.final, self.final_pending = hs, True
        if self.reply is None:
            self.violate("MM2-HS-001", C2S, index, "the final handshake came before the server's "
                         "reply (the client must repeat its handshake with the reply's extensions)")
        if hs.major != MAJOR_VERSION:
            self.owed = ("MM2-HS-004", f"final handshake of major version {hs.major}")
            return None
        names = hs.names()
        required = [e.name for e in self.reply.required] if self.reply is not None else []
        lacking = [n for n in required if n not in names]
        if lacking:
            # "If the client do not support the extensions required by the server it MUST send
            # an ERROR frame and disconnect"; the server, seeing them dropped, refuses.
            self.violate("MM2-HS-008", C2S, index, "the final handshake lacks the extension(s) the "
                         f"server required: {', '.join(lacking)}")
            self.owed = ("MM2-HS-015", f"final handshake without {', '.join(lacking)}")
            return None
        self._agree(hs)
        return None

    def _offer(self, hs: Handshake, index, time) -> None:
        self.offer, self.offer_at, self.offer_answered = hs, (index, time), False
        if hs.major < MAJOR_VERSION:
            # "If versions differ the lowest version should be used. If the client or the server
            # doesn't speak the lower version it should send an ERROR frame and then
            # disconnect": a lower major is owed an ERROR by a server that does not speak it
            # (its reply in that major shows it does). A higher major may be answered with
            # the server's own 1.x: the lower version.
            self.owed = ("MM2-HS-004", f"offer of major version {hs.major}")

    def _reply(self, hs: Handshake, index, time) -> Optional[Exchange]:
        if self.offer is None:
            self.violate("MM2-HS-001", S2C, index, "the server sent its handshake before the "
                         "client's (the server answers the client's offer)")
            self.reply = hs
            return None
        self.reply = hs
        if self.owed is not None and self.owed[0] == "MM2-HS-004" and hs.major == self.offer.major:
            self.owed = None                 # the server speaks the client's lower major
        elif self.owed is not None:
            requirement, why = self.owed
            self.owed = None
            self.violate(requirement, S2C, index, f"{why} answered with a handshake instead of "
                         "an ERROR frame")
        elif not self.real and hs.major == self.offer.major and hs.minor > self.offer.minor:
            # "If versions differ the lowest version should be used." (SharpMessaging answers
            # 1.1 whatever the client offers: SPEC_NOTES.)
            self.violate("MM2-HS-003", S2C, index, f"the reply carries {hs.major}.{hs.minor} to an "
                         f"offer of {self.offer.major}.{self.offer.minor} (the lower is used)")
        return self._answer_offer(index, time)

    def _answer_offer(self, index, time) -> Optional[Exchange]:
        if self.offer_answered:
            return None
        self.offer_answered = True
        at, sent = self.offer_at
        return self.answered(at, index, "Handshake", time - sent)

    def _agree(self, final: Handshake) -> None:
        """What the final handshake agreed ("Once the handshake is completed the extensions
        are indexed using the order in the final handshake message", from 1)."""
        self.open = True
        exts = final.required + final.optional
        self.ext_names = tuple(e.name for e in exts)
        self.json = JSON in self.ext_names
        for i, ext in enumerate(exts, 1):
            if ext.name in (ACK, BATCH_ACK):
                try:
                    window, _ = _window(ext, self.real)
                except Refusal:
                    return              # a count nobody can read: no window to hold anyone to
                self.ack_id, self.window = i, window
                explicit = ext.name == ACK or any(ext.get(k) is not None for k in WINDOW_KEYS)
                self.window_rule = WINDOW_RULES[ext.name] if explicit else DEFAULT_WINDOW_RULE
                return

    # -- ERROR frames ----------------------------------------------------------------------------

    def _error(self, direction, frame: Error, index, time) -> Optional[Exchange]:
        if direction == C2S:
            self.final_pending = False
            if self.final is None:
                # The client refuses the server's reply (MM2-HS-010): it must disconnect.
                self.refused[C2S] = "MM2-HS-010"
            return None
        exchange = None
        if self.offer is not None and self.reply is None:
            # The offer refused ("it must send and ERROR frame and disconnect directly after").
            exchange = self._answer_offer(index, time)
            rule = self.owed[0] if self.owed else "MM2-HS-006"
            self.owed = None
            # SharpMessaging keeps the connection after refusing a missing extension, and the
            # client may offer again (SPEC_NOTES): waived in that profile.
            if self.real and rule == "MM2-HS-006":
                self.offer = None
            else:
                self.refused[S2C] = rule
        elif self.final_pending or self.owed is not None:
            # The final handshake refused (MM2-HS-007/-008, or -004 for its version).
            rule = self.owed[0] if self.owed else "MM2-HS-007"
            self.owed = None
            self.refused[S2C] = rule
            self.open = False
        self.final_pending = False
        return exchange

    def _server_may_send(self, frame, index) -> bool:
        """Server frames other than handshake and ERROR: only once the handshake is complete."""
        self.final_pending = False
        if self.owed is not None:
            requirement, why = self.owed
            self.owed = None
            self.violate(requirement, S2C, index, f"{why} was not refused: the server sent "
                         f"{type(frame).__name__} instead of an ERROR frame")
            return False
        if not self.open:
            self.violate("MM2-HS-001", S2C, index, f"{type(frame).__name__} before the client's "
                         "final handshake completed the handshake")
            return False
        return True

    # -- MESSAGE / SEND and acks -----------------------------------------------------------------

    def _message(self, direction, message: Message, index, time) -> None:
        if not self.open:
            return
        pusher = self.pushers[direction]
        if pusher.last is None:
            # SPEC_NOTES: the real implementation starts at 1; the document does not say where.
            if message.sequence != SEQUENCE_FIRST:
                self.violate("MM2-MSG-007", direction, index, f"the first sequence number is "
                             f"{message.sequence}, not {SEQUENCE_FIRST}")
        elif message.sequence != next_sequence(pusher.last):
            # "Sequence number which wraps once reaching 65535", and the ack algorithm's
            # "lastReceivedNumber == 65535 ? 1 : lastReceivedNumber + 1".
            rule = "MM2-MSG-003" if pusher.last == SEQUENCE_MAX else "MM2-MSG-002"
            self.violate(rule, direction, index, f"sequence number {message.sequence}, expected "
                         f"{next_sequence(pusher.last)}")
        pusher.last = message.sequence
        if direction == C2S and self.json and not _is_json(message.payload):
            self.violate("MM2-JSON-001", C2S, index, f"SEND {message.sequence}: the json extension "
                         "is agreed but the payload is not JSON")
        if self.window is not None:
            if len(pusher.inflight) >= self.window and _OTHER[direction] not in self.blind:
                # "The sender MUST NOT send any more messages until the pre-configured number
                # of messages have been ACKed."
                self.violate(self.window_rule, direction, index,
                             f"message {message.sequence} pushed with {len(pusher.inflight)} "
                             f"unacked (window {self.window})")
            pusher.inflight.append((message.sequence, index, time))

    def _extension(self, direction, frame: ExtensionFrame, index, time) -> Optional[Exchange]:
        if not self.open:
            return None
        if not 1 <= frame.extension_id <= len(self.ext_names):
            self.violate("MM2-HS-011", direction, index, f"extension id {frame.extension_id}: the "
                         f"final handshake has {len(self.ext_names)} extension(s)")
            return None
        if frame.extension_id != self.ack_id:
            return None
        if len(frame.payload) != _SEQ.size:
            self.violate("MM2-ACK-007", direction, index, f"an ack carries a 2-byte sequence number, "
                         f"not {len(frame.payload)} bytes")
            return None
        seq = _SEQ.unpack(frame.payload)[0]
        inflight = self.pushers[_OTHER[direction]].inflight
        if all(s != seq for s, _, _ in inflight):
            return None                 # nothing of that number in flight: nothing released
        # "all MESSAGE frames with a sequence number up to the specified one have been ACK:ed",
        # wrapped or not: release in sending order up to it.
        named = None
        while inflight:
            s, at, sent = inflight.popleft()
            exchange = self.answered(at, index, "Message", time - sent)
            if s == seq:
                named = exchange
                break
        return named

    # -- framing ---------------------------------------------------------------------------------

    def _framing_requirement(self, direction, error) -> str:
        return frame_requirement(error, self.handshakes[direction] < HANDSHAKES[direction]
                                 and not self._gave_up(direction))

    def _gave_up(self, direction) -> bool:
        """An ERROR instead of a handshake ends that side's handshake (the decoder reads
        frames after it)."""
        return self.refused[direction] is not None or (direction == S2C and self.offer_answered)


def _is_json(payload: bytes) -> bool:
    try:
        strict_json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, strict_json.JSONProblem):
        return False
    return True
