"""Route and Partitions (rabbitmq-stream-protocol.adoc "Route", "Partitions", both
"experimental"; the real server's answer is a code then an array of streams, and RabbitMQ 3.10
sends it with the request key: profile feature ``route_response_bit``)."""
import pytest

from wirecheck.conformance.report import verdicts
from wirecheck.reference_impl.rabbitmq_stream.codec import (CreateSuperStream, CreateSuperStreamResponse, Partitions,
                                                  PartitionsResponse, Route, RouteResponse)
from wirecheck.reference_impl.rabbitmq_stream.constants import Code


def _route(rmqs, conn, routing_key, super_stream):
    cid = rmqs.cid()
    conn.send(Route(cid, routing_key, super_stream))
    return rmqs.expect_routing_answer(conn, RouteResponse, cid)


def _partitions(rmqs, conn, super_stream):
    cid = rmqs.cid()
    conn.send(Partitions(cid, super_stream))
    return rmqs.expect_routing_answer(conn, PartitionsResponse, cid)


@pytest.mark.requirement("RMQS-ROUTE-001")
def test_route_is_answered_once_with_its_correlation_id(rmqs):
    conn = rmqs.connect()
    _route(rmqs, conn, "wirecheck-key", rmqs.name("missing-super"))
    rmqs.barrier(conn, "the Route response")


@pytest.mark.requirement("RMQS-ROUTE-002")
def test_route_of_missing_super_stream_gets_2_and_no_stream(rmqs):
    conn = rmqs.connect()
    answer, _ = _route(rmqs, conn, "wirecheck-key", rmqs.name("missing-super"))
    assert answer.code == Code.STREAM_DOES_NOT_EXIST and not answer.single, answer
    assert answer.streams == (), answer


@pytest.mark.requirement("RMQS-ROUTE-003")
def test_route_and_partitions_response_key(rmqs):
    conn = rmqs.connect()
    expected = rmqs.profile.feature("route_response_bit")
    _, route_bit = _route(rmqs, conn, "k", rmqs.name("missing-super"))
    _, partitions_bit = _partitions(rmqs, conn, rmqs.name("missing-super"))
    shape = "with the response bit" if expected else "with the request key (profile: route_response_bit false)"
    assert (route_bit, partitions_bit) == (expected, expected), \
        f"Route/Partitions answered {'with' if route_bit else 'without'}/" \
        f"{'with' if partitions_bit else 'without'} the response bit; the profile expects them {shape}"


@pytest.mark.requirement("RMQS-PART-001")
def test_partitions_of_missing_or_plain_stream_gets_2(rmqs):
    conn = rmqs.connect()
    plain = rmqs.create(conn, "plain")
    for name in (rmqs.name("missing-super"), plain):
        answer, _ = _partitions(rmqs, conn, name)
        assert (answer.code, answer.streams) == (Code.STREAM_DOES_NOT_EXIST, ()), (name, answer)


def _super_stream(rmqs, conn, partitions=3):
    """A super stream made with CreateSuperStream (key 29): the only way over the stream
    protocol, so targets without keys 26-30 cannot have one here."""
    if not rmqs.profile.feature("keys_26_30"):
        verdicts.unimplemented("keys_26_30: no CreateSuperStream, so no super stream to route to")
    name = rmqs.name("super")
    parts = tuple(f"{name}-{i}" for i in range(partitions))
    keys = tuple(f"key-{i}" for i in range(partitions))
    cid = rmqs.cid()
    conn.send(CreateSuperStream(cid, name, parts, keys, {}))
    conn.expect(CreateSuperStreamResponse, correlation_id=cid, code=Code.OK)
    rmqs.created_super.append(name)
    rmqs.created.extend(parts)
    return name, parts, keys


@pytest.mark.requirement("RMQS-ROUTE-004")
def test_route_binding_key_to_its_partition(rmqs):
    conn = rmqs.connect()
    name, parts, keys = _super_stream(rmqs, conn)
    for part, key in zip(parts, keys):
        answer, _ = _route(rmqs, conn, key, name)
        assert (answer.code, answer.streams) == (Code.OK, (part,)), (key, answer)


@pytest.mark.requirement("RMQS-PART-002")
def test_partitions_of_super_stream_in_order(rmqs):
    conn = rmqs.connect()
    name, parts, _ = _super_stream(rmqs, conn, partitions=4)
    answer, _ = _partitions(rmqs, conn, name)
    assert (answer.code, answer.streams) == (Code.OK, parts), answer
