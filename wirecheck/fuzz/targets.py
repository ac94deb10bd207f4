"""The catalogue of atheris targets: what each one fuzzes, its seed corpus and dictionary.

Every runner (``python -m wirecheck.fuzz.run_smoke``, ``wirecheck fuzz``, the campaign) and the corpus
replay in tests/fuzz/test_fuzz_corpus.py iterate :data:`TARGETS`; a new target is one entry here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

KINDS = ("decoder", "nested", "session")
#: Where runs write, relative to the directory they are started in (never into the installed
#: package): campaign summaries, and the inputs that crashed or hung a target.
REPORTS = Path("reports") / "fuzz"
FINDINGS = REPORTS / "findings"


@dataclass(frozen=True)
class FuzzTarget:
    name: str
    kind: str            # "decoder" (a protocol's frame decoder, whole vs chunked), "nested"
                         # (a decoder inside frames or before them: payloads, chunks,
                         # handshakes, compression; or the frames' re-encoding, "_roundtrip")
                         # or "session" (a whole server session, bytes in -> bytes out)
    module: str          # run as ``python -m module``; defines ``TestOneInput``
    corpus: str          # fuzz/corpora/<corpus>; crashers in fuzz/crashers/<corpus>
    dictionary: str      # fuzz/dictionaries/<dictionary>
    protocol: str        # registry id of the protocol it exercises; "" for the kit's own
                         # readers that belong to no protocol (the capture reader)
    seeds: str = "stream"    # a seed is a whole "stream" of frames, one Osiris "chunk", a
                             # client "session" (a profile marker may follow it), one
                             # "message" body (VibeMQ), or a VibeMQ client session
                             # ("vibemq-session": Connect first, a profile marker may follow),
                             # a Micromessage2 side from its handshake ("mm2-handshake") or a
                             # Micromessage2 client session ("mm2-session": the offer first, a
                             # profile marker may follow), a captured HTTP/WebSocket or raw
                             # direction ("http-stream"), a text for a syntax parser ("text"),
                             # a SASL response ("sasl"), a pcap/pcapng file ("capture"),
                             # a BlipMQ write-ahead log file ("wal"), or a file a user hands
                             # the kit, real or broken ("user-file": any bytes)


TARGETS = {t.name: t for t in (
    FuzzTarget("blipmq_decoder", "decoder", "wirecheck.fuzz.fuzz_blipmq_decoder", "blipmq", "blipmq.dict", "blipmq"),
    FuzzTarget("blipmq_roundtrip", "nested", "wirecheck.fuzz.fuzz_blipmq_roundtrip", "blipmq", "blipmq.dict", "blipmq"),
    FuzzTarget("blipmq_session", "session", "wirecheck.fuzz.fuzz_blipmq_session", "blipmq", "blipmq.dict", "blipmq"),
    FuzzTarget("blipmq_wal", "nested", "wirecheck.fuzz.fuzz_blipmq_wal", "blipmq-wal", "blipmq-wal.dict", "blipmq",
               seeds="wal"),
    FuzzTarget("rmqs_decoder", "decoder", "wirecheck.fuzz.fuzz_rmqs_decoder", "rabbitmq-stream", "rabbitmq-stream.dict",
               "rabbitmq-stream"),
    FuzzTarget("rmqs_roundtrip", "nested", "wirecheck.fuzz.fuzz_rmqs_roundtrip", "rabbitmq-stream",
               "rabbitmq-stream.dict", "rabbitmq-stream"),
    FuzzTarget("rmqs_session", "session", "wirecheck.fuzz.fuzz_rmqs_session", "rabbitmq-stream", "rabbitmq-stream.dict",
               "rabbitmq-stream"),
    FuzzTarget("rmqs_chunk", "nested", "wirecheck.fuzz.fuzz_rmqs_chunk", "rabbitmq-stream-chunk", "rabbitmq-stream.dict",
               "rabbitmq-stream", seeds="chunk"),
    FuzzTarget("signalr_json", "decoder", "wirecheck.fuzz.fuzz_signalr_json", "signalr-json", "signalr.dict", "signalr"),
    FuzzTarget("signalr_msgpack", "decoder", "wirecheck.fuzz.fuzz_signalr_msgpack", "signalr-msgpack", "signalr.dict",
               "signalr"),
    FuzzTarget("signalr_json_roundtrip", "nested", "wirecheck.fuzz.fuzz_signalr_json_roundtrip", "signalr-json",
               "signalr.dict", "signalr"),
    FuzzTarget("signalr_msgpack_roundtrip", "nested", "wirecheck.fuzz.fuzz_signalr_msgpack_roundtrip",
               "signalr-msgpack", "signalr.dict", "signalr"),
    FuzzTarget("signalr_json_body", "nested", "wirecheck.fuzz.fuzz_signalr_json_body", "signalr-json", "signalr.dict",
               "signalr"),
    FuzzTarget("signalr_msgpack_body", "nested", "wirecheck.fuzz.fuzz_signalr_msgpack_body", "signalr-msgpack",
               "signalr.dict", "signalr"),
    FuzzTarget("signalr_handshake", "nested", "wirecheck.fuzz.fuzz_signalr_handshake", "signalr-json", "signalr.dict",
               "signalr"),
    FuzzTarget("signalr_session", "session", "wirecheck.fuzz.fuzz_signalr_session", "signalr-session", "signalr.dict",
               "signalr", seeds="session"),
    FuzzTarget("vibemq_decoder", "decoder", "wirecheck.fuzz.fuzz_vibemq_decoder", "vibemq", "vibemq.dict", "vibemq"),
    FuzzTarget("vibemq_roundtrip", "nested", "wirecheck.fuzz.fuzz_vibemq_roundtrip", "vibemq", "vibemq.dict", "vibemq"),
    FuzzTarget("vibemq_decompress", "nested", "wirecheck.fuzz.fuzz_vibemq_decompress", "vibemq", "vibemq.dict",
               "vibemq"),
    FuzzTarget("vibemq_message", "nested", "wirecheck.fuzz.fuzz_vibemq_message", "vibemq-message", "vibemq.dict",
               "vibemq", seeds="message"),
    FuzzTarget("vibemq_session", "session", "wirecheck.fuzz.fuzz_vibemq_session", "vibemq-session", "vibemq.dict",
               "vibemq", seeds="vibemq-session"),
    FuzzTarget("mm2_decoder", "decoder", "wirecheck.fuzz.fuzz_mm2_decoder", "micromessage2", "micromessage2.dict",
               "micromessage2"),
    FuzzTarget("mm2_roundtrip", "nested", "wirecheck.fuzz.fuzz_mm2_roundtrip", "micromessage2", "micromessage2.dict",
               "micromessage2"),
    FuzzTarget("mm2_nested", "nested", "wirecheck.fuzz.fuzz_mm2_nested", "micromessage2", "micromessage2.dict",
               "micromessage2"),
    FuzzTarget("mm2_handshake", "nested", "wirecheck.fuzz.fuzz_mm2_handshake", "micromessage2-handshake",
               "micromessage2.dict", "micromessage2", seeds="mm2-handshake"),
    FuzzTarget("mm2_session", "session", "wirecheck.fuzz.fuzz_mm2_session", "micromessage2-session", "micromessage2.dict",
               "micromessage2", seeds="mm2-session"),
    # The capture decoder of SignalR's HTTP + WebSocket transport, the suite's WebSocket reader,
    # the text syntaxes of MM2 and RMQS SASL fed directly, and the kit's capture-file reading
    # (protocol "": no registry id, so the per-protocol campaign does not schedule it).
    FuzzTarget("signalr_http", "nested", "wirecheck.fuzz.fuzz_signalr_http", "signalr-http", "signalr-http.dict",
               "signalr", seeds="http-stream"),
    FuzzTarget("websocket_reader", "nested", "wirecheck.fuzz.fuzz_websocket_reader", "signalr-http",
               "signalr-http.dict", "signalr", seeds="http-stream"),
    FuzzTarget("mm2_syntax", "nested", "wirecheck.fuzz.fuzz_mm2_syntax", "micromessage2-syntax", "micromessage2.dict",
               "micromessage2", seeds="text"),
    FuzzTarget("rmqs_sasl", "nested", "wirecheck.fuzz.fuzz_rmqs_sasl", "rabbitmq-stream-sasl", "rabbitmq-stream.dict",
               "rabbitmq-stream", seeds="sasl"),
    FuzzTarget("pcap", "nested", "wirecheck.fuzz.fuzz_pcap", "pcap", "pcap.dict", "", seeds="capture"),
    # what else the kit reads from its users (fuzz/harnesses/inputs.py): real and broken files
    FuzzTarget("input_profile", "nested", "wirecheck.fuzz.fuzz_input_profile", "input-profile", "input-profile.dict",
               "", seeds="user-file"),
    FuzzTarget("input_report", "nested", "wirecheck.fuzz.fuzz_input_report", "input-report", "input-json.dict",
               "", seeds="user-file"),
    FuzzTarget("input_finding", "nested", "wirecheck.fuzz.fuzz_input_finding", "input-finding", "input-json.dict",
               "", seeds="user-file"),
    FuzzTarget("input_driver_output", "nested", "wirecheck.fuzz.fuzz_input_driver_output", "input-driver-output",
               "input-driver-output.dict", "", seeds="user-file"),
)}


def of_protocol(protocol: str, kinds=KINDS) -> list[FuzzTarget]:
    """The targets of ``protocol`` whose kind is in ``kinds``, by name."""
    return [t for _, t in sorted(TARGETS.items()) if t.protocol == protocol and t.kind in kinds]
