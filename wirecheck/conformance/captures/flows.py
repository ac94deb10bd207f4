"""One capture's TCP conversations turned into table rows: the work of the pipeline's tasks,
in plain Python (no Spark here, so the same code runs in a Spark task (pipeline/spark_job.py),
in :func:`analyze_file` (the plain analysis, pipeline/local.py; serve --check-clients), in a
replay (:class:`LiveFlow`) and in tests).

:class:`FlowAnalyzer` is a reassembly sink (conformance/captures/tcpflows.py). Each connection gets
the protocol its server port names, a capture decoder per direction (as ``wirecheck decode
--pcap`` has: conformance/captures/decode.py) and the protocol's observer
(reference_impl/core/observer.py), fed both directions in the order the bytes were seen.
It yields rows of three tables (pipeline/schema.py names their columns): a ``frames`` row per decoded frame, a
``violations`` row per rule broken, a ``flows`` row per connection once both directions end.

Decode errors, as in ``decode --pcap``: a stream error ends its direction, a payload error
(a whole frame whose content is wrong) does not. Each is a violation of the side that sent
the bytes (the observer says which requirement) unless the capture is to blame: bytes missing from the capture (``CAPTURE_GAP``) or the capture ending inside a
frame (``TRUNCATED`` at its end), which count as flow errors only.
"""
from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Optional

from wirecheck.conformance.captures.decode import GAP, feed_items, feed_sized
from wirecheck.conformance.captures.pcapfile import PcapReader
from wirecheck.conformance.captures.tcpflows import Connection, Stream, TcpReassembler, endpoint
from wirecheck.reference_impl.core.errors import Category, FrameError

#: Longest text kept of a frame field in ``frames.fields`` (the frames table holds key
#: fields, not payloads: the capture has those).
FIELD_TEXT = 64
#: Frame fields that carry a response or error code, in the order looked for (``frames.code``).
CODE_FIELDS = ("code", "error_code", "status", "error")

Row = tuple[str, dict]          # (table name, row)


def _key_fields(view: dict) -> dict[str, str]:
    """The scalar fields of a frame's dict view as short strings (payloads, lists and maps
    left out)."""
    out = {}
    for name, value in view.items():
        if name == "type" or isinstance(value, (dict, list)) or value is None:
            continue
        text = str(value)
        out[name] = text if len(text) <= FIELD_TEXT else text[:FIELD_TEXT - 1] + "\u2026"
    return out


def _code(view: dict) -> Optional[str]:
    for name in CODE_FIELDS:
        value = view.get(name)
        if value is not None and not isinstance(value, (dict, list)):
            return str(value)[:FIELD_TEXT]
    return None


class _Side:
    """One direction's decoder and counters."""
    __slots__ = ("decoder", "exact", "mark", "frames", "bytes", "how", "error", "sized")

    def __init__(self, decoder) -> None:
        self.decoder = decoder
        # the decoder says where each frame ends (``consumed``): exact frame sizes
        self.exact = hasattr(decoder, "consumed")
        self.mark = 0           # with ``exact``: the stream offset where the last frame ended
        self.frames = 0
        self.bytes = 0          # bytes of the direction seen (delivered in order, all fed)
        self.how = ""
        self.error = ""         # the first decode error or capture problem
        self.sized = 0          # bytes accounted to frames so far


class _Flow:
    __slots__ = ("spec", "name", "conn", "observer", "sides", "index", "start", "last",
                 "violations", "latencies", "errors")

    def __init__(self, spec, name: str, conn: Connection, observer, sides: dict, time: float) -> None:
        self.spec, self.name, self.conn, self.observer, self.sides = spec, name, conn, observer, sides
        self.index = 0
        self.start = self.last = time
        self.violations = 0
        self.latencies: list[float] = []
        self.errors = 0


class FlowAnalyzer:
    """Reassembly sink producing rows; ``specs_by_port`` picks each connection's protocol by
    its server port. Rows go to ``emit(table, row)``."""

    def __init__(self, file: str, specs_by_port: dict, emit: Callable[[str, dict], None],
                 profile: Optional[str] = None, levels: Optional[Callable[[str], str]] = None) -> None:
        self.file = file
        self.specs_by_port = specs_by_port
        self.emit = emit
        self.profile = profile
        self.levels = levels or (lambda requirement: "")
        self._reuse: dict[frozenset, int] = {}
        #: Set while the reassembler ends what is still open at the end of the input: those
        #: ends happen at the input's last time, which says nothing of the conversation (and
        #: differs between a whole capture and a group of its conversations).
        self.closing = False

    # -- reassembly sink -----------------------------------------------------------------------

    def opened(self, conn: Connection, time: float) -> None:
        spec = self.specs_by_port.get(conn.server[1]) or self.specs_by_port.get(conn.client[1])
        if spec is None:
            return
        pair = frozenset((conn.client, conn.server))
        n = self._reuse.get(pair, 0)
        self._reuse[pair] = n + 1
        name = conn.name if n == 0 else f"{conn.name}#{n}"
        sides = {d: _Side(spec.capture_decoder(origin="client" if d == "c2s" else "server",
                                               profile=self.profile))
                 for d in ("c2s", "s2c")}
        observer = spec.make_observer(self.profile)
        observer.mid_stream = conn.mid_stream
        conn.user["flow"] = _Flow(spec, name, conn, observer, sides, time)

    def data(self, s: Stream, data: bytes, time: float) -> None:
        flow: _Flow | None = s.conn.user.get("flow")
        if flow is None:
            s.done = True
            return
        side = flow.sides[s.direction]
        side.bytes += len(data)
        flow.last = time
        if side.exact:
            items, sizes, ended, side.mark = feed_sized(side.decoder, data, side.mark)
            self._items(flow, s, side, items, time, sizes)
        else:
            items, ended = feed_items(side.decoder, data)
            self._items(flow, s, side, items, time)
        if ended:
            s.done = True

    def ended(self, s: Stream, time: float, how: str, missing) -> None:
        flow: _Flow | None = s.conn.user.get("flow")
        if flow is None:
            return
        side = flow.sides[s.direction]
        side.how = how
        if not self.closing:
            flow.last = max(flow.last, time)
        if not s.done:
            if missing is not None:
                side.error = side.error or f"{GAP}: capture lacks bytes {missing[0]}..{missing[1]}"
                flow.errors += 1
            else:
                try:
                    frames = side.decoder.eof() or []
                except FrameError as exc:
                    if how == "end" and exc.category == Category.TRUNCATED:
                        self._items(flow, s, side, exc.frames, time)
                        side.error = side.error or f"{exc.category}: the capture ends inside a frame"
                        flow.errors += 1
                    else:
                        self._items(flow, s, side, [*exc.frames, exc], time)
                else:
                    self._items(flow, s, side, frames, time)
            s.done = True
        flow.observer.closed(s.direction, how, flow.index, time)
        if all(other.ended for other in s.conn.streams.values()):
            self._finish(flow, time)

    # -- rows ----------------------------------------------------------------------------------

    def _items(self, flow: _Flow, s: Stream, side: _Side, items: list, time: float,
               sizes: Optional[list[int]] = None) -> None:
        """Rows for a read's frames and decode errors, in stream order. ``sizes``: each item's
        bytes (:func:`feed_sized`); without them, the frames share the bytes taken evenly."""
        if not items:
            return
        direction = s.direction
        frames = sum(not isinstance(item, FrameError) for item in items)
        # Bytes taken by these frames: what was fed minus what the decoder still holds. One
        # frame per read (most reads) gets its exact size; without ``sizes`` (a decoder that
        # does not say where each frame ended: SignalR's), frames that came in one read share
        # it evenly.
        taken = side.bytes - side.decoder.buffered - side.sized
        side.sized += taken
        share, extra = divmod(taken, frames) if frames else (0, 0)
        spec, emit, seen = flow.spec, self.emit, 0
        for position, item in enumerate(items):
            if isinstance(item, FrameError):
                side.error = side.error or f"{item.category}: {item}"
                flow.errors += 1
                flow.observer.malformed(direction, item, flow.index, time)
                continue
            index = flow.index
            flow.index += 1
            side.frames += 1
            seen += 1
            view = spec.frame_to_dict(item)
            exchange = flow.observer.frame(direction, item, index, time)
            latency = exchange.latency if exchange is not None else None
            if latency is not None:
                flow.latencies.append(latency)
            emit("frames", {"file": self.file, "flow": flow.name, "direction": direction,
                            "index": index, "timestamp": time, "protocol": spec.id,
                            "type": str(view.get("type", type(item).__name__)),
                            "size": sizes[position] if sizes is not None else
                            share + (extra if seen == frames else 0),
                            "code": _code(view), "latency": latency,
                            "fields": _key_fields(view)})
        self._violations(flow)

    def _violations(self, flow: _Flow) -> None:
        found = flow.observer.violations
        while flow.violations < len(found):
            v = found[flow.violations]
            flow.violations += 1
            self.emit("violations", {"file": self.file, "flow": flow.name, "protocol": flow.spec.id,
                                     "direction": v.direction, "index": v.index,
                                     "requirement": v.requirement,
                                     "level": self.levels(v.requirement), "message": v.message})

    def _finish(self, flow: _Flow, time: float) -> None:
        flow.observer.finish(time)
        self._violations(flow)
        c2s, s2c = flow.sides["c2s"], flow.sides["s2c"]
        lat = sorted(flow.latencies)
        self.emit("flows", {
            "file": self.file, "flow": flow.name, "protocol": flow.spec.id,
            "client": endpoint(*flow.conn.client), "server": endpoint(*flow.conn.server),
            "start": flow.start, "end": flow.last, "duration": flow.last - flow.start,
            "frames": c2s.frames + s2c.frames, "frames_c2s": c2s.frames, "frames_s2c": s2c.frames,
            "bytes_c2s": c2s.bytes, "bytes_s2c": s2c.bytes,
            "end_c2s": c2s.how, "end_s2c": s2c.how, "mid_stream": flow.conn.mid_stream,
            "errors": flow.errors, "error": c2s.error or s2c.error or None,
            "violations": flow.violations, "exchanges": len(lat),
            "latency_mean": sum(lat) / len(lat) if lat else None,
            "latency_p50": lat[len(lat) // 2] if lat else None,
            "latency_max": lat[-1] if lat else None,
        })


class LiveFlow:
    """One conversation fed as it happens rather than from a capture (``wirecheck replay``: the
    bytes sent to the target and its answers), judged by the same per-flow analysis as a
    capture's: :class:`FlowAnalyzer` and the protocol's observer. ``violations`` holds the
    violation rows (each with its ``direction`` and ``level``) as they are found."""

    def __init__(self, spec, client: tuple[str, int], server: tuple[str, int], time: float,
                 profile: Optional[str] = None, name: str = "live") -> None:
        self.violations: list[dict] = []
        self.flow_row: dict | None = None
        self._analyzer = FlowAnalyzer(name, {server[1]: spec}, self._emit, profile, level)
        self.conn = Connection(0, client, server)
        self.conn.streams = {"c2s": Stream(self.conn, "c2s", client, server),
                             "s2c": Stream(self.conn, "s2c", server, client)}
        self._analyzer.opened(self.conn, time)

    def _emit(self, table: str, row: dict) -> None:
        if table == "violations":
            self.violations.append(row)
        elif table == "flows":
            self.flow_row = row

    def data(self, direction: str, data: bytes, time: float) -> None:
        s = self.conn.streams[direction]
        if data and not s.done and not s.ended:
            self._analyzer.data(s, data, time)

    def ended(self, direction: str, how: str, time: float) -> None:
        """The end of one direction: ``fin``, ``rst``, or ``end`` (cut off, not closed)."""
        s = self.conn.streams[direction]
        if not s.ended:
            s.ended = True
            self._analyzer.ended(s, time, how, None)

    def finish(self, time: float) -> list[dict]:
        """End what is still open (as cut off: ``end``); every violation found."""
        for direction in ("c2s", "s2c"):
            self.ended(direction, "end", time)
        return self.violations


def specs_by_port(specs: Iterable, ports: Iterable[int] = ()) -> dict:
    """Server port -> protocol: each protocol's well-known ports; ``ports`` (given with one
    protocol only) add ports of that protocol."""
    specs = list(specs)
    out: dict = {}
    for spec in specs:
        for port in (spec.default_port, *spec.extra_ports):
            out.setdefault(port, spec)
    extra = list(ports)
    if extra:
        if len(specs) != 1:
            raise ValueError("--port needs exactly one --protocol")
        for port in extra:
            out[port] = specs[0]
    return out


def iter_rows(file: str, segments: Iterable, by_port: dict, profile: Optional[str] = None,
              levels=None) -> Iterator[Row]:
    """Reassemble and analyze ``segments`` (one capture's, or one group of its connections'),
    in order; ``(table, row)`` pairs as they come (nothing held beyond a segment's rows)."""
    rows: list[Row] = []
    sink = FlowAnalyzer(file, by_port, lambda table, row: rows.append((table, row)), profile, levels)
    reassembler = TcpReassembler(sink, by_port)
    last = 0.0
    for seg in segments:
        last = seg.time
        reassembler.segment(seg)
        if rows:
            yield from rows
            rows.clear()
    sink.closing = True
    reassembler.close(last)
    yield from rows


def analyze_file(path: str, by_port: dict, profile: Optional[str] = None) -> dict[str, list[dict]]:
    """Every row of the capture at ``path``, by table; a capture broken past its header gives
    the rows of what precedes the break, and ``damaged`` says where and what."""
    tables: dict[str, list[dict]] = defaultdict(list)
    with PcapReader(path, tolerant=True) as reader:
        for table, row in iter_rows(path, reader, by_port, profile, level):
            tables[table].append(row)
    if reader.damage is not None:
        tables["damaged"].append({"file": path, "error": reader.damage, "whole": False})
    return tables


@lru_cache(maxsize=None)
def _levels() -> dict[str, str]:
    from wirecheck.conformance.requirements import catalogue
    from wirecheck.reference_impl.core import registry
    out: dict[str, str] = {}
    for spec in registry.all_protocols():
        out.update({i: r.level for i, r in catalogue(spec.requirements).items()})
    return out


def level(requirement: str) -> str:
    """MUST / SHOULD / MAY of a requirement ID ("" for an ID in no catalogue)."""
    return _levels().get(requirement, "")
