"""The handshake negotiation ("Handshake"), as pure functions: the server's reply to a client's
offer, the check of the client's final handshake, and what the final handshake agrees (the
extension ids and the ack window).

Readings (docs/protocols/micromessage2.md, "How the kit reads the document"):

- Versions: a major other than 1 is refused (ERROR, then disconnect); the minor used is the
  lower of the two ("If versions differ the lowest version should be used"). The document
  profile's reply carries that minor; the real implementation always answers 1.1.
- The reply's RequiredExtensions are what the server requires of the client (the document's
  example answers ``json;dotnet`` with an empty Required); its OptionalExtensions are the
  client's optional ones the server supports, then its own suggestions. The real
  implementation (``sharpmessaging``) answers Required = the union of both sides' required
  (its own first), Optional = both sides' optional ones minus those, unfiltered.
- A required extension the server lacks: ERROR and disconnect (document); ERROR and the
  connection stays open (``sharpmessaging``, observed, SPEC_NOTES).
- The final handshake lists every extension to use; each must be supported, every extension
  the server required must be in it, and ``ack`` and ``batch-ack`` are alternatives (the
  document's server offers both, "json;ack;batch-ack", for the client to pick one).
  Extension ids are the positions in the final handshake, Required then Optional, from 1.
- batch-ack window: property ``max-count`` (the handshake section), also read as ``count``
  (the introduction) and ``batch-max`` (the pusher section), default 10; ``ack`` is a window of
  1 in the document and ``MessagesPerAck`` (default 10) in the real implementation, which also
  acks after ``AckExpireTime`` ms (default 500).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .codec import Handshake
from .constants import (ACK, ACK_EXPIRE_TIME, BATCH_ACK, DEFAULT_BATCH_WINDOW, DOCUMENT_MINOR,
                        DOTNET, JSON, MAJOR_VERSION, MESSAGES_PER_ACK, OFFICIAL_EXTENSIONS, PUBSUB,
                        SEQUENCE_MAX, SHARPMESSAGING_MINOR)
from .syntax import Extension, format_extensions

WINDOW_KEYS = ("max-count", "count", "batch-max")
#: The longest extension list a handshake can carry ("RequiredExtensionsLength | 2", unsigned short).
MAX_EXTENSIONS_LENGTH = 0xFFFF
#: Digits a count or a number of milliseconds may have: more than a window (at most 65,534) or
#: AckExpireTime needs, and far below int()'s limit (4,300 digits: beyond it int() raises).
MAX_DIGITS = 18


def _number(raw: str) -> Optional[int]:
    """``raw`` as a number written in ASCII digits, or None. Not ``str.isdigit()`` alone: it
    also accepts digits int() refuses ("²", from ``%C2%B2``), which escaped as a ValueError."""
    if not raw.isascii() or not raw.isdigit() or len(raw) > MAX_DIGITS:
        return None
    return int(raw)


@dataclass(frozen=True)
class ServerPolicy:
    profile: str = "document"
    identity: str = "wirecheck"
    minor: int = DOCUMENT_MINOR
    supported: tuple[str, ...] = OFFICIAL_EXTENSIONS
    required: tuple[Extension, ...] = ()
    optional: tuple[Extension, ...] = ()

    @classmethod
    def for_profile(cls, profile: str, **overrides) -> "ServerPolicy":
        if profile == "sharpmessaging":
            base = dict(profile=profile, identity="FastSocket v1.1", minor=SHARPMESSAGING_MINOR,
                        optional=(Extension(ACK, ((MESSAGES_PER_ACK, "10"), (ACK_EXPIRE_TIME, "500"))),
                                  Extension(DOTNET)))
        else:
            base = dict(profile=profile)
        base.update(overrides)
        return cls(**base)

    @property
    def real(self) -> bool:
        return self.profile == "sharpmessaging"


class Refusal(Exception):
    """The handshake fails: send ``text`` in an ERROR frame, then disconnect if ``close``."""

    def __init__(self, text: str, close: bool = True, requirement: str = "") -> None:
        super().__init__(text)
        self.text, self.close, self.requirement = text, close, requirement


def _names(exts) -> list[str]:
    return [e.name for e in exts]


def reply_to(policy: ServerPolicy, offer: Handshake) -> Handshake:
    """The server's handshake answering ``offer``; :class:`Refusal` when it cannot."""
    # "If versions differ the lowest version should be used. If the client or the server
    # doesn't speak the lower version it should send an ERROR frame and then disconnect": a
    # higher major gets this server's 1.x (the client decides); a lower one it cannot speak.
    if offer.major < MAJOR_VERSION:
        raise Refusal(f"major version {offer.major} is not supported (this server speaks "
                      f"{MAJOR_VERSION}.{policy.minor})", requirement="MM2-HS-004")
    missing = [n for n in _names(offer.required) if n not in policy.supported]
    if missing:
        text = (f"Server to not support the following extensions: {', '.join(missing)}" if policy.real
                else f"required extension(s) not supported: {', '.join(missing)}")
        raise Refusal(text, close=not policy.real, requirement="MM2-HS-005")
    if policy.real:
        # SharpMessaging's server (its source, commit 6c00afd): its own required extensions
        # first (their properties win over the client's), then the client's; Optional is
        # every optional one of either side not already required, whether the server
        # supports it or not (so MM2-HS-014, a SHOULD, is NON-STRICT against it).
        required = list(policy.required) + [e for e in offer.required if e.name not in _names(policy.required)]
        taken = set(_names(required))
        optional, seen = [], set()
        for e in list(offer.optional) + list(policy.optional):
            if e.name not in taken and e.name not in seen:
                optional.append(e)
                seen.add(e.name)
        # The client's own list may fill its u16 length ("OptionalExtensionsLength | 2"): with
        # the server's suggestions added, the echo would not fit. Rather than write a frame it
        # cannot, the reply leaves out what the server does not support, then (a part of the
        # client's list, so it fits) its own suggestions.
        for keep in (optional, [e for e in optional if e.name in policy.supported],
                     [e for e in offer.optional if e.name in policy.supported and e.name not in taken]):
            if len(format_extensions(keep).encode()) <= MAX_EXTENSIONS_LENGTH:
                optional = keep
                break
        return Handshake(policy.identity, tuple(required), tuple(optional), MAJOR_VERSION, policy.minor)
    optional = [e for e in offer.optional if e.name in policy.supported]
    optional += [e for e in policy.optional if e.name not in _names(optional)]
    return Handshake(policy.identity, tuple(policy.required), tuple(optional), MAJOR_VERSION,
                     min(offer.minor, policy.minor))


@dataclass(frozen=True)
class Agreement:
    """What a completed handshake agreed: extension ids, the ack window, timings."""
    extensions: tuple[Extension, ...] = ()
    minor: int = DOCUMENT_MINOR
    window: Optional[int] = None          # None: no acks; pushers push freely
    ack_id: Optional[int] = None          # the id of the ack or batch-ack extension
    ack_expire: Optional[float] = None    # seconds after which a receiver acks (real: AckExpireTime)
    by_id: dict = field(default_factory=dict)

    def id_of(self, name: str) -> Optional[int]:
        for i, e in enumerate(self.extensions, 1):
            if e.name == name:
                return i
        return None

    def has(self, name: str) -> bool:
        return self.id_of(name) is not None


def _window(ext: Extension, real: bool) -> tuple[int, Optional[float]]:
    if ext.name == ACK and not real:
        return 1, None
    keys = (MESSAGES_PER_ACK,) if ext.name == ACK else WINDOW_KEYS
    raw = next((ext.get(k) for k in keys if ext.get(k) is not None), None)
    expire = None
    if ext.name == ACK:
        expire_raw = ext.get(ACK_EXPIRE_TIME, "500")
        expire_ms = _number(expire_raw)
        if expire_ms is None:
            raise Refusal(f"{ACK_EXPIRE_TIME}={expire_raw!r} is not a number of milliseconds",
                          requirement="MM2-ACK-003")
        expire = expire_ms / 1000
    if raw is None:
        return DEFAULT_BATCH_WINDOW, expire
    window = _number(raw)
    if window is None or not 1 <= window <= SEQUENCE_MAX - 1:
        raise Refusal(f"{ext.name} window {raw!r} is not a count from 1 to {SEQUENCE_MAX - 1}",
                      requirement="MM2-ACK-003")
    return window, expire


def agree(policy: ServerPolicy, offer: Handshake, reply: Handshake, final: Handshake) -> Agreement:
    """Check the client's final handshake against the offer and the reply."""
    if final.major != MAJOR_VERSION:
        raise Refusal(f"the final handshake's major version {final.major} is not {MAJOR_VERSION}",
                      requirement="MM2-HS-004")
    exts = final.required + final.optional
    names = _names(exts)
    if len(set(names)) != len(names):
        raise Refusal("an extension is listed twice in the final handshake", requirement="MM2-HS-007")
    unsupported = [n for n in names if n not in policy.supported]
    if unsupported:
        raise Refusal(f"the final handshake uses unsupported extension(s): {', '.join(unsupported)}",
                      requirement="MM2-HS-007")
    dropped = [n for n in _names(reply.required) if n not in names]
    if dropped:
        text = (f"Server requires the following extensions: {', '.join(dropped)}" if policy.real
                else f"the final handshake lacks the required extension(s): {', '.join(dropped)}")
        raise Refusal(text, requirement="MM2-HS-015")
    if ACK in names and BATCH_ACK in names:
        raise Refusal("ack and batch-ack are alternatives: the final handshake has both",
                      requirement="MM2-HS-007")
    window = ack_id = expire = None
    for i, e in enumerate(exts, 1):
        if e.name in (ACK, BATCH_ACK):
            window, expire = _window(e, policy.real)
            ack_id = i
    return Agreement(tuple(exts), min(final.minor, policy.minor) if not policy.real else policy.minor,
                     window, ack_id, expire, {i: e.name for i, e in enumerate(exts, 1)})


__all__ = ["ServerPolicy", "Refusal", "Agreement", "reply_to", "agree", "WINDOW_KEYS",
           "ACK", "BATCH_ACK", "JSON", "DOTNET", "PUBSUB"]
