"""``wirecheck decode`` (frames from hex, a file or a capture, one JSON line each) and
``wirecheck protocols`` (what the kit knows)."""
from __future__ import annotations

import json
import sys

from wirecheck.cli.support import EXIT_HARNESS, EXIT_OK, check_profile, profile_base
from wirecheck.reference_impl.core import registry
from wirecheck.reference_impl.core.errors import FrameError


def cmd_protocols(args) -> int:
    rows = [{"id": s.id, "title": s.title, "document": s.document, "default_port": s.default_port,
             "requirement_prefix": s.requirement_prefix, "profiles": sorted(s.profiles),
             "default_profile": s.default_profile} for s in registry.all_protocols()]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(f"{r['id']:<16} port {r['default_port']:<6} {r['document']:<32} "
                  f"profiles: {', '.join(r['profiles'])}")
    return EXIT_OK


def _read_input(args) -> bytes:
    if args.hex is not None:
        text = "".join(args.hex.split()).replace(":", "")
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise SystemExit(f"wirecheck decode: --hex is not hexadecimal: {args.hex!r}")
    with open(args.file, "rb") as fh:
        return fh.read()


def cmd_decode(args) -> int:
    spec = args.protocol
    if (err := check_profile(spec, args.profile)) is not None:
        print(f"wirecheck decode: {err}", file=sys.stderr)
        return EXIT_HARNESS
    if args.pcap:
        from wirecheck.conformance.captures.decode import decode_pcap
        return decode_pcap(spec, args.pcap, ports=args.port or (),
                           profile=profile_base(spec, args.profile))
    data = _read_input(args)
    decoder = spec.make_decoder(profile=profile_base(spec, args.profile))
    frames: list = []
    error: FrameError | None = None
    try:
        frames = decoder.feed(data)
        decoder.eof()
    except FrameError as exc:
        frames = frames or exc.frames
        error = exc
    for frame in frames:
        print(json.dumps(spec.frame_to_dict(frame)))
    if error is not None:
        print(json.dumps(error.as_dict()))
        return 1
    return EXIT_OK
