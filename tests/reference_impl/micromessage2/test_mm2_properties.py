"""Micromessage2 properties beyond the shared split-read ones (tests/reference_impl/core/test_codec_properties.py):
handshakes round-trip under any split, sequence arithmetic across the wrap against a model,
the pusher's window never exceeded, filter evaluation against a model."""
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from wirecheck.conformance.strategies import micromessage2 as strat
from wirecheck.conformance.strategies.invariants import decode_chunked
from wirecheck.reference_impl.micromessage2 import codec, filters
from wirecheck.reference_impl.micromessage2.window import Outbox, acked_range, next_sequence

FAST = settings(max_examples=150, deadline=None)


@FAST
@given(st.data())
def test_handshakes_round_trip_any_split(data):
    pair = [data.draw(strat.handshakes()), data.draw(strat.handshakes())]
    wire = b"".join(codec.encode(h) for h in pair) + codec.encode(codec.Command("x"))
    sizes = data.draw(strat.chunkings(wire))
    dec = codec.make_decoder(origin="client", profile="sharpmessaging")
    frames = []
    pos = 0
    for n in sizes:
        frames += dec.feed(wire[pos:pos + n])
        pos += n
    assert frames == pair + [codec.Command("x")]


@FAST
@given(strat.sequences, st.integers(1, 300))
def test_acked_range_matches_a_model(last, count):
    model, n = [], last
    for _ in range(count):
        n = n % 65535 + 1                 # 65535 -> 1, never 0
        model.append(n)
    assert acked_range(last, model[-1]) == model
    assert all(1 <= s <= 65535 for s in model)


@FAST
@given(st.integers(1, 20), st.integers(65500, 65535), st.lists(st.integers(0, 25), max_size=40))
def test_outbox_never_exceeds_the_window(window, start, acks):
    box = Outbox(window)
    box.last = start
    sent = []
    for a in acks:
        while box.has_room():
            sent.append(box.send(len(sent)))
        assert len(box.inflight) == window
        inflight = [s for s, _ in box.inflight]
        released = box.ack(inflight[min(a, len(inflight) - 1)])
        assert released == list(range(sent.index(inflight[0]), sent.index(inflight[0]) + len(released)))
    assert all(next_sequence(a) == b for a, b in zip(sent, sent[1:]))


def _model(cond: str, props: dict) -> bool:
    cond_f = filters.parse_filter(cond)
    for c in cond_f.conditions:
        raw = props.get(c.name)
        if raw is None or raw[0] != c.value[0]:
            return False
        have = Decimal(raw[1:]) if raw[0] in "ND" else raw[1:]
        want = c.value[1]
        ok = {"=": have == want, "!=": have != want}.get(c.op)
        if ok is None and raw[0] == "T":
            ok = {"<": str(have).startswith(want), ">": str(have).endswith(want),
                  "&": want in have, "~": want not in have}[c.op]
        elif ok is None:
            ok = {"<": have < want, "<=": have <= want, ">": have > want, ">=": have >= want}[c.op]
        if not ok:
            return False
    return True


@FAST
@given(strat.filter_cases())
def test_filter_evaluation_matches_a_model(case):
    text, props = case
    try:
        flt = filters.parse_filter(text)
    except filters.FilterError:
        return                            # operators not used for the type: refused, by design
    assert flt.matches(props) == _model(text, dict(props))


@FAST
@given(st.data())
def test_messages_round_trip_any_split(data):
    stream = data.draw(st.lists(strat.messages(), max_size=4))
    wire = strat.stream_bytes(stream)
    assert decode_chunked(wire, data.draw(strat.chunkings(wire)), "micromessage2") == (stream, None, None)


@FAST
@given(st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                 st.decimals(allow_nan=False, allow_infinity=False)))
def test_numbers_and_dates_written_are_read_back_exactly(number):
    # Python's shortest forms (1e-07, 1E+2) have exponents, which a FILTER_VALUE has not.
    exact = Decimal(repr(number)) if isinstance(number, float) else Decimal(number)
    assert filters.parse_value(filters.format_value(number)) == ("N", exact)
    if not isinstance(number, Decimal):
        assert filters.parse_value(filters.date_value(number)) == ("D", exact)
