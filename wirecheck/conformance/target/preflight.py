"""Before any test: is the target there, does it speak the protocol, does it take the
profile's credentials? A wrong port, protocol or credential is one message and exit 2, not
hundreds of FAILs that blame the server (the plugin runs this at session start with
``--target``; ``--no-preflight`` skips it).

Each protocol's steps are the suite's own (its ``conftest.py`` vocabulary: the handshake and
authentication every test performs), each on a fresh connection, so that a failure says which
step failed. What the failure means depends on where it happened:

- the first step: nothing listens (refused), something listens but says nothing (silent), or
  answers with bytes that are not this protocol: the setting to change is ``--target`` or
  ``--protocol``;
- an authentication step: the credentials were refused: the profile's ``[credentials]``;
- a step that tells the document's versions apart (SignalR's handshake): ``--profile``.

It sends away only what cannot be judged (an answer that reads as nothing of this protocol
names, where one does, the built-in profile whose reading understands it). An answer of the
right protocol that breaks a rule after the first step (an AUTH answered with the wrong
correlation id, a frame of an unknown type first, an answer cut short, none at all) is not an
explicit refusal of the credentials (:func:`refused`: a NACK 401/403, an authentication error
code): the suite runs and judges it, where it is a verdict of the requirement it breaks.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Callable

from wirecheck.conformance.target.connection import Budget, Target, TargetClosed, TargetError, TargetMalformed, TargetTimeout

RECORD_SEPARATOR = b"\x1e"          # SignalR's JSON records end with it
#: The longest a preflight may take, whatever the receive timeout: a wrong setting is named
#: well within 10 s.
DEADLINE = 8.0


class PreflightError(Exception):
    """The one-line reason the suite cannot run against this target, naming the setting."""


@dataclass(frozen=True)
class Step:
    name: str                         # "the handshake", "authentication", ...
    run: Callable                     # (vocabulary) -> None; raises TargetError
    kind: str = "contact"             # contact | credentials | version
    setting: str = ""                 # what to change when this step fails


def _vocabulary(spec, target, *args):
    """The suite's vocabulary class for ``spec`` (Blip, Vibe, MM2, Rmqs, Sig) on ``target``."""
    module = importlib.import_module(spec.suite + ".conftest")
    return getattr(module, VOCABULARY[spec.id])(target, *args)


VOCABULARY = {"blipmq": "Blip", "vibemq": "Vibe", "micromessage2": "MM2", "rabbitmq-stream": "Rmqs",
              "signalr": "Sig"}


def _signalr_draft(sig) -> None:
    """The draft's handshake has no answer ("Overview"), so ask for one that must come: an
    invocation of a method no hub has is completed with an error. A v1 hub answers the
    handshake first (``{}``), which the draft's reading does not parse."""
    from wirecheck.reference_impl.signalr.messages import Completion
    conn = sig.connect(encoding="json")
    iid = sig.new_id()
    conn.send(sig.invocation("wirecheck-preflight", invocation_id=iid))
    try:
        answer = sig.recv(conn, "a Completion of an unknown method")
    except TargetMalformed:
        got = _received(sig.target)
        if got.startswith(b"{") and RECORD_SEPARATOR in got:     # a v1 handshake answer
            record = got.split(RECORD_SEPARATOR)[0][:80].decode("utf-8", "replace")
            raise TargetError(f"the hub answered the handshake ({record}), as a SignalR v1 hub does; "
                              f"the draft's handshake has no answer") from None
        raise
    if not isinstance(answer, Completion):
        raise TargetError(f"expected a Completion, got {answer!r}")


def steps(spec, profile) -> list[Step]:
    from wirecheck.conformance.profiles import known_settings
    creds = ", ".join(f"{k} = …" for k in sorted(known_settings(spec)["credentials"]))
    cred_setting = f"the profile's [credentials] ({creds}; --profile FILE.toml)"
    if spec.id == "blipmq":
        return [Step("HELLO", lambda v: v.connect(auth=False)),
                Step("AUTH", lambda v: v.connect(), "credentials", cred_setting)]
    if spec.id == "vibemq":
        return [Step("Connect with the profile's password", lambda v: v.connect(), "credentials", cred_setting)]
    if spec.id == "micromessage2":
        return [Step("handshake", lambda v: v.connect())]
    if spec.id == "rabbitmq-stream":
        return [Step("PeerProperties", lambda v: v.connect("peer_properties")),
                Step("SaslHandshake", lambda v: v.connect("sasl_handshake")),
                Step("SaslAuthenticate (PLAIN)", lambda v: v.connect("authenticated"), "credentials", cred_setting),
                Step("Open of the virtual host", lambda v: v.connect("open"), "credentials",
                     "the profile's [credentials] vhost (--profile FILE.toml)")]
    if spec.id == "signalr":
        if profile.base == "draft":
            return [Step("handshake and an invocation", _signalr_draft, "version",
                         "--profile v1 if the hub answers the handshake (SignalR v1 does)")]
        return [Step("handshake", lambda v: v.connect(encoding="json"), "version",
                     "--profile draft if the hub follows the draft document, whose handshake has no answer")]
    raise PreflightError(f"no preflight for {spec.id}")


def _received(target: Target) -> bytes:
    """The bytes the target sent on the last connection (what the transcript kept)."""
    if not target.transcripts:
        return b""
    return b"".join(e.data for e in target.transcripts[-1].entries if e.direction == "<-")


def _shown(data: bytes) -> str:
    head = data[:24]
    text = "".join(chr(b) if 32 <= b < 127 else "." for b in head)
    return f"{head.hex(' ')} ({text!r})" + (" …" if len(data) > len(head) else "")


def preflight(spec, profile, host: str, port: int, url: str | None = None, timeout: float = 2.0) -> None:
    """Raise :class:`PreflightError` when the target cannot be tested as configured."""
    where = url or f"{host}:{port}"
    started = time.monotonic()
    for i, step in enumerate(steps(spec, profile)):
        left = DEADLINE - (time.monotonic() - started)
        if left <= 0.5:
            raise PreflightError(f"{where}: the preflight took over {DEADLINE:g} s before {step.name}; "
                                 f"the target is too slow to test with --timeout {timeout:g}")
        target = Target(host, port, spec, profile, timeout=min(timeout, left / 2), url=url,
                        budget=Budget(left))
        vocabulary = _vocabulary(spec, target, "json") if spec.id == "signalr" else _vocabulary(spec, target)
        try:
            step.run(vocabulary)
        except TargetError as exc:
            got = _received(target)
            if i > 0 and step.kind == "credentials" and not refused(spec, profile, got):
                return              # an answer that breaks a rule: the suite's to judge
            raise PreflightError(_explain(spec, where, step, i == 0, exc, got, target.timeout, profile)) from None
        finally:
            target.close_all()


#: RabbitMQ Stream response codes that refuse the credentials or the virtual host: SASL
#: mechanism not supported, authentication failure, SASL error, authentication failure
#: (loopback), virtual host access failure, access refused.
RMQS_REFUSALS = {0x07, 0x08, 0x09, 0x0B, 0x0C, 0x10}
#: Words of a VibeMQ error code that refuse the credentials.
VIBEMQ_REFUSALS = ("AUTH", "UNAUTHORI", "FORBIDDEN", "DENIED", "CREDENTIAL")


def refused(spec, profile, got: bytes) -> bool:
    """True when the frames ``got`` (the step's answers) hold an explicit refusal of the
    credentials: a BlipMQ NACK 401 or 403, a RabbitMQ Stream response with an authentication or
    access code, a VibeMQ error whose code names authentication."""
    from wirecheck.reference_impl.core.errors import FrameError
    decoder = spec.make_decoder(origin="server", profile=profile.base if profile is not None else None)
    frames = []
    try:
        frames = decoder.feed(got)
    except FrameError as exc:
        frames = list(getattr(exc, "frames", ()) or ())         # those read before the bad one
    for frame in frames:
        try:
            d = spec.frame_to_dict(frame)
        except Exception:            # a view of a frame never decides a refusal
            continue
        code = d.get("code")
        if spec.id == "blipmq" and d.get("type") == "NACK" and code in (401, 403):
            return True
        if spec.id == "rabbitmq-stream" and isinstance(code, int) and int(code) in RMQS_REFUSALS:
            return True
        if spec.id == "vibemq" and any(w in str(d.get("errorCode") or "").upper() for w in VIBEMQ_REFUSALS):
            return True
    return False


def _explain(spec, where: str, step: Step, first: bool, exc: TargetError, got: bytes, timeout: float,
             profile=None) -> str:
    proto = spec.id
    text = str(exc)
    if isinstance(exc, TargetClosed) and text.startswith("cannot "):
        return (f"{text}: nothing accepts connections there. Is the server running, and is "
                f"--target right?")
    if text.startswith("negotiate"):
        return (f"{where}: {text}: check the hub's URL in --target (http://HOST:PORT/path-of-the-hub), "
                f"or give HOST:PORT for a hub on raw TCP")
    if first and got.startswith(b"HTTP/"):
        status = got.split(b"\r\n", 1)[0].decode("latin-1")
        fix = ("give the hub's URL, --target http://HOST:PORT/path-of-the-hub" if proto == "signalr"
               else "check --target and --protocol")
        return (f"{where} answered the {proto} {step.name} in HTTP ({status!r}): that port speaks "
                f"HTTP, not {proto} over raw TCP; {fix}")
    if first and not got and isinstance(exc, TargetTimeout):
        hint = f" Or {step.setting}." if step.kind == "version" else ""
        return (f"{where} accepted the connection but did not answer the {proto} {step.name} within "
                f"{timeout:g} s: is it a {proto} server (--protocol), on this port (--target)?{hint}")
    if first and isinstance(exc, TargetMalformed):
        readers = _profiles_that_read(spec, got, profile)
        if readers:
            return (f"{where} answered the {proto} {step.name} with bytes the profile "
                    f"{profile.base if profile is not None else 'document'!r} cannot read ({text}), "
                    f"which the built-in profile {' or '.join(map(repr, readers))} reads: try --profile "
                    f"{readers[0]}")
        return (f"{where} answered the {proto} {step.name} with bytes that are not {proto} "
                f"[{_shown(got)}]: check --protocol and --target")
    if first and isinstance(exc, TargetClosed) and not got:
        also = f", and are {step.setting.replace('the profile', 'the profile', 1)} right" \
            if step.kind == "credentials" else ""
        return (f"{where} closed the connection at the {proto} {step.name} without an answer: is it a "
                f"{proto} server (--protocol){also}?")
    if step.kind == "credentials":
        return f"{where} refused the {proto} {step.name}: {text}. Set {step.setting}"
    if step.kind == "version":
        return f"{where} failed the {proto} {step.name}: {text}. Try {step.setting}"
    return f"{where} failed the {proto} {step.name}: {text}"


def _profiles_that_read(spec, got: bytes, profile) -> list[str]:
    """The built-in profiles (other than ``profile``'s reading) whose decoder reads ``got``
    without error, to at least one frame."""
    from wirecheck.reference_impl.core.errors import FrameError
    current = profile.base if profile is not None else None
    out = []
    for name in sorted(spec.profiles):
        if name == current:
            continue
        try:
            if spec.make_decoder(origin="server", profile=name).feed(got):
                out.append(name)
        except (FrameError, KeyError, ValueError):        # not this reading, or not a reading at all
            continue
    return out


def alive(spec, profile, host: str, port: int, url: str | None = None, timeout: float = 2.0) -> str | None:
    """None when the target still takes the first step of the handshake on a new connection;
    otherwise why it is down: it refuses connections (the process is gone, or stopped
    listening), or accepts and then says nothing or closes without a word (hung, or dying).
    An answer of any other kind is life: judging answers is the tests' work."""
    step = steps(spec, profile)[0]
    target = Target(host, port, spec, profile, timeout=timeout, url=url, budget=Budget(4 * timeout + 5))
    vocabulary = _vocabulary(spec, target, "json") if spec.id == "signalr" else _vocabulary(spec, target)
    try:
        step.run(vocabulary)
    except TargetClosed as exc:
        if str(exc).startswith("cannot "):
            return f"it refuses connections ({exc})"
        if not _received(target):
            return f"it closed a new connection at the {spec.id} {step.name} without an answer"
    except TargetTimeout as exc:
        text = str(exc)
        if text.startswith(("no answer to a connection", "cannot open")):
            return f"it does not accept connections ({text})"
        if text.startswith("negotiate failed"):
            return f"its HTTP endpoint does not answer ({text})"
        if not _received(target):
            return f"it accepts connections but did not answer the {spec.id} {step.name} within {timeout:g} s"
    except TargetError as exc:
        text = str(exc)
        if text.startswith("negotiate failed") and ("Errno" in text or "timed out" in text):
            return f"its HTTP endpoint does not answer ({text})"
    finally:
        target.close_all()
    return None
