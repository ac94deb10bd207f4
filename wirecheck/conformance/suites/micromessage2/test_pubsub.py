"""Publish/subscribe, topics and queues (glossary), filters ("FILTER_VALUE", "Filtering
operators"), and the json and dotnet extensions."""
import pytest

from wirecheck.reference_impl.micromessage2.codec import ExtensionFrame, Message


@pytest.fixture(autouse=True)
def _needs_pubsub(mm2):
    """Every test here subscribes (a COMMAND of the pubsub extension)."""
    mm2.needs("pubsub")


def _subscribe(mm2, dest, filter=None, required="pubsub", name="subscriber"):
    sub = mm2.connect(required=required, name=name)
    mm2.subscribe(sub, dest, filter)
    mm2.barrier(sub, "subscribe")
    return sub


@pytest.mark.requirement("MM2-PS-001")
def test_subscribe_needs_pubsub(mm2):
    conn = mm2.connect(required="")
    mm2.subscribe(conn, mm2.destination("topic"))
    mm2.expect_error(conn, "an ERROR: subscribe without the pubsub extension")
    mm2.barrier(conn)


@pytest.mark.requirement("MM2-PS-002")
def test_topic_reaches_every_subscriber(mm2):
    topic = mm2.destination("topic")
    subs = [_subscribe(mm2, topic, name=f"subscriber {i}") for i in range(3)]
    pub = mm2.connect(name="publisher")
    mm2.send(pub, topic, b"news")
    mm2.barrier(pub)
    for sub in subs:
        assert mm2.expect(sub, Message).payload == b"news"
        mm2.barrier(sub)


@pytest.mark.requirement("MM2-PS-003")
def test_queue_message_goes_to_one_receiver_in_order(mm2):
    queue = mm2.destination("queue")
    subs = [_subscribe(mm2, queue, name=f"receiver {i}") for i in range(2)]
    pub = mm2.connect(name="publisher")
    for i in range(6):
        mm2.send(pub, queue, b"%d" % i)
    mm2.barrier(pub)
    received = [[int(m.payload) for m in mm2.drain(sub, "6 queue messages")] for sub in subs]
    assert sorted(received[0] + received[1]) == list(range(6)), f"each message exactly once: {received}"
    assert all(r == sorted(r) for r in received), f"a queue keeps its order: {received}"


@pytest.mark.requirement("MM2-PS-003")
def test_queue_keeps_messages_until_a_receiver_comes(mm2):
    queue = mm2.destination("queue")
    pub = mm2.connect(name="publisher")
    for i in range(3):
        mm2.send(pub, queue, b"%d" % i)
    mm2.barrier(pub)
    sub = mm2.connect(name="late receiver")
    mm2.subscribe(sub, queue)
    assert [m.payload for m in mm2.messages(sub, 3)] == [b"0", b"1", b"2"]
    mm2.barrier(sub)


NUMBERS = [("=", "N10", [10]), ("!=", "N10", [5, 20]), ("<", "N10", [5]), ("<=", "N10", [5, 10]),
           (">", "N10", [20]), (">=", "N10", [10, 20])]


@pytest.mark.requirement("MM2-PS-004", "MM2-PS-006")
@pytest.mark.parametrize("op,value,expected", NUMBERS)
def test_number_filters(mm2, op, value, expected):
    topic = mm2.destination("topic")
    sub = _subscribe(mm2, topic, f"n{op}{value}")
    pub = mm2.connect(name="publisher")
    for n in (5, 10, 20):
        mm2.send(pub, topic, b"%d" % n, (("n", f"N{n}" if mm2.typed else str(n)),))
    mm2.send(pub, topic, b"none")                              # no property: never matches
    mm2.barrier(pub)
    got = [int(m.payload) for m in mm2.messages(sub, len(expected))]
    assert got == expected
    mm2.barrier(sub, f"the messages matching n{op}{value}")


@pytest.mark.requirement("MM2-PS-006", "MM2-PS-008")
def test_long_numbers_and_dates(mm2):
    topic = mm2.destination("topic")
    sub = _subscribe(mm2, topic, "big>N9223372036854775806;at>=D1413198000.0")
    pub = mm2.connect(name="publisher")
    n, d = ("N", "D") if mm2.typed else ("", "")     # sharpmessaging: untyped values
    mm2.send(pub, topic, b"yes", (("big", f"{n}9223372036854775807"), ("at", f"{d}1413198000.5")))
    mm2.send(pub, topic, b"no", (("big", f"{n}9223372036854775807"), ("at", f"{d}1413197999.0")))
    mm2.barrier(pub)
    assert mm2.expect(sub, Message).payload == b"yes"
    mm2.barrier(sub)


TEXT = [("=", "Hello%20World", ["Hello World"]), ("!=", "Hello%20World", ["hello world", "Say Hello"]),
        ("<", "Hel", ["Hello World"]), (">", "World", ["Hello World"]), ("&", "Hello", ["Hello World", "Say Hello"]),
        ("~", "World", ["hello world", "Say Hello"])]


@pytest.mark.requirement("MM2-PS-004", "MM2-PS-005")
@pytest.mark.parametrize("op,value,expected", TEXT)
def test_text_filters_case_sensitive(mm2, op, value, expected):
    from wirecheck.reference_impl.micromessage2.filters import format_value
    topic = mm2.destination("topic")
    sub = _subscribe(mm2, topic, f"t{op}T{value}")
    pub = mm2.connect(name="publisher")
    for text in ("Hello World", "hello world", "Say Hello"):
        mm2.send(pub, topic, text.encode(), (("t", format_value(text) if mm2.typed else text),))
    mm2.barrier(pub)
    got = [m.payload.decode() for m in mm2.messages(sub, len(expected))]
    assert got == expected
    mm2.barrier(sub, f"the messages matching t{op}T{value}")


@pytest.mark.requirement("MM2-PS-007")
@pytest.mark.parametrize("bad", ["price", "price=10", "name<=Tabc", "n&N1", "=N1"])
def test_bad_filter_gets_an_error(mm2, bad):
    conn = mm2.connect()
    mm2.subscribe(conn, mm2.destination("topic"), bad)
    mm2.expect_error(conn, f"an ERROR for the filter {bad!r}")
    mm2.barrier(conn)


@pytest.mark.requirement("MM2-JSON-001")
def test_json_extension_refuses_other_payloads(mm2):
    topic = mm2.destination("topic")
    sub = _subscribe(mm2, topic, required="pubsub;json")
    mm2.send(sub, topic, b'{"ok": true}')
    assert mm2.expect(sub, Message).payload == b'{"ok": true}'
    mm2.send(sub, topic, b"not json")
    mm2.expect_error(sub, "an ERROR for a non-JSON payload with json agreed")
    mm2.barrier(sub)


@pytest.mark.requirement("MM2-NET-001", "MM2-NET-002")
def test_dotnet_type_frame_before_each_message(mm2):
    topic = mm2.destination("topic")
    sub = _subscribe(mm2, topic, required="pubsub;dotnet")
    pub = mm2.connect(required="pubsub;dotnet", name="publisher")
    type_name = "OneTrueError.Contracts.Reports, OneTrueError.Client"
    pub.send(ExtensionFrame(pub.ids["dotnet"], type_name.encode()))
    mm2.send(pub, topic, b"1")
    mm2.send(pub, topic, b"2")                      # no new type frame: the last type holds
    mm2.barrier(pub)
    for payload in (b"1", b"2"):
        frame = mm2.next(sub, "the dotnet type frame")
        assert frame == ExtensionFrame(sub.ids["dotnet"], type_name.encode()), frame
        assert mm2.expect(sub, Message).payload == payload
    mm2.barrier(sub)
