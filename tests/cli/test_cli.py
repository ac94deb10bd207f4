"""The ``wirecheck`` command line, as a user runs it."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.support.blipmq_proc import BrokerProcess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WIRECHECK = [sys.executable, "-m", "wirecheck"]


def wirecheck(*args, timeout=60):
    return subprocess.run(WIRECHECK + list(args), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_decode_hello_from_the_issue():
    r = wirecheck("decode", "--protocol", "blipmq", "--hex",
                  "00 00 00 0B 01 00 00 00 00 00 00 00 01 00 01")
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == [{"type": "HELLO", "correlation_id": 1, "protocol_version": 1}]


@pytest.mark.parametrize("hexed,expected", [
    ("00 00 00 12 02 00 00 00 00 00 00 00 02 00 07 64 65 76 2D 6B 65 79",
     {"type": "AUTH", "correlation_id": 2, "api_key": "dev-key"}),
    ("00 00 00 10 04 00 00 00 00 00 00 00 03 00 04 64 65 6D 6F 01",
     {"type": "SUBSCRIBE", "correlation_id": 3, "topic": "demo", "qos": 1}),
    ("00 00 00 12 03 00 00 00 00 00 00 00 04 01 00 04 64 65 6D 6F 68 69",
     {"type": "PUBLISH", "correlation_id": 4, "qos": 1, "topic": "demo", "message": "hi",
      "message_hex": "6869"}),
    ("00 00 00 11 05 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 2A",
     {"type": "ACK", "correlation_id": 3, "subscription_id": 42}),
])
def test_decode_every_document_sample(hexed, expected):
    r = wirecheck("decode", "--protocol", "blipmq", "--hex", hexed)
    assert r.returncode == 0 and lines(r.stdout) == [expected]


def test_decode_huge_length_is_immediate():
    start = time.monotonic()
    r = wirecheck("decode", "--protocol", "blipmq", "--hex", "FF FF FF FF 01")
    assert r.returncode == 1
    assert lines(r.stdout) == [{"error": "length 4294967295 > 16777216", "category": "LENGTH_TOO_LARGE",
                                "protocol": "blipmq", "offset": 0}]
    assert time.monotonic() - start < 10


def test_decode_prints_frames_before_the_error_and_truncation(tmp_path):
    data = bytes.fromhex("00 00 00 09 07 00 00 00 00 00 00 00 05 00 00 00 09 08")
    f = tmp_path / "stream.bin"
    f.write_bytes(data)
    r = wirecheck("decode", "--protocol", "blipmq", "--file", str(f))
    out = lines(r.stdout)
    assert r.returncode == 1
    assert out[0] == {"type": "PING", "correlation_id": 5}
    assert out[1]["category"] == "TRUNCATED" and out[1]["offset"] == 13


def test_decode_rejects_bad_hex_and_unknown_protocol():
    r = wirecheck("decode", "--protocol", "blipmq", "--hex", "zz")
    assert r.returncode != 0 and "hexadecimal" in r.stderr
    r = wirecheck("decode", "--protocol", "nope", "--hex", "00")
    assert r.returncode == 2 and "unknown protocol" in r.stderr


def test_protocols_json():
    r = wirecheck("protocols", "--json")
    (row,) = [p for p in json.loads(r.stdout) if p["id"] == "blipmq"]
    assert row["default_port"] == 5555 and "document" in row["profiles"]


def test_serve_then_pytest_target_from_the_repository_root():
    broker = BrokerProcess().start()
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "--target", f"127.0.0.1:{broker.port}",
                            "--protocol", "blipmq", "-q", "-n", "2", "-p", "no:cacheprovider"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        broker.terminate()
    assert r.returncode == 0, r.stdout[-3000:]
    assert "blipmq:" in r.stdout and " 0 failed" in r.stdout
    # exactly the BlipMQ suite: none of the project's own tests ran
    assert "tests/" not in r.stdout


def test_serve_refuses_a_busy_port():
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
        r = wirecheck("serve", "--protocol", "blipmq", "--port", str(port), timeout=30)
    assert r.returncode == 2 and "cannot listen" in r.stderr and "(--port)" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr        # one line, the option named


def test_serve_with_api_keys_and_data_dir(tmp_path):
    broker = BrokerProcess("--api-key", "k1", "--api-key", "k2", "--data-dir", str(tmp_path)).start()
    try:
        import asyncio

        from wirecheck.reference_impl.blipmq.client import BlipClient, NackError

        async def go():
            c = await BlipClient.connect("127.0.0.1", broker.port, api_key="k2")
            await c.close()
            with pytest.raises(NackError):
                await BlipClient.connect("127.0.0.1", broker.port, api_key="dev-key")
        asyncio.run(go())
    finally:
        broker.terminate()
    assert (tmp_path / "blipmq.wal").exists()


def test_unknown_profile_is_refused_by_decode_and_serve():
    for cmd in (["decode", "--protocol", "blipmq", "--profile", "nope", "--hex", "00"],
                ["serve", "--protocol", "blipmq", "--profile", "nope", "--port", "0"]):
        r = wirecheck(*cmd, timeout=30)
        assert r.returncode == 2 and "unknown profile" in r.stderr


def test_serve_option_sets_a_broker_setting():
    """``--option max_queue=2``: the broker keeps two pending messages per subscription, the
    oldest evicted (blipmq state.py), where the default keeps 1,024."""
    broker = BrokerProcess("--option", "max_queue=2").start()
    try:
        import asyncio

        from wirecheck.reference_impl.blipmq.client import BlipClient

        async def go():
            c = await BlipClient.connect("127.0.0.1", broker.port)
            sub = await c.subscribe("t", qos=0)
            for body in (b"1", b"2", b"3"):
                await c.publish("t", body, confirm=True)
            got = []
            while (m := await c.poll(sub)) is not None:
                got.append(m.message)
            await c.close()
            return got
        assert asyncio.run(go()) == [b"2", b"3"]
    finally:
        broker.terminate()


def _redelivered_within(port: int, seconds: float) -> bool:
    """Whether an unacknowledged QoS1 delivery comes again within ``seconds``."""
    import asyncio
    import time

    from wirecheck.reference_impl.blipmq.client import BlipClient

    async def go():
        c = await BlipClient.connect("127.0.0.1", port)
        sub = await c.subscribe("timing", qos=1)
        await c.publish("timing", b"m", qos=1, confirm=True)
        assert (await c.poll(sub)) is not None
        deadline = time.monotonic() + seconds
        again = False
        while not again and time.monotonic() < deadline:
            again = (await c.poll(sub)) is not None
            await asyncio.sleep(0.02)
        await c.close()
        return again
    return asyncio.run(go())


def test_serve_runs_the_broker_with_the_profiles_timing(tmp_path):
    """``serve --profile FILE`` gives the broker the profile's [timing] (what the suite will
    wait for); an --option overrides it; a [timing] name the broker lacks exits 2, named."""
    profile = tmp_path / "slow.toml"
    profile.write_text('extends = "document"\n[timing]\nretry_backoff = 30.0\n')
    for extra, expected in (((), False), (("--option", "retry_backoff=0.05"), True)):
        broker = BrokerProcess("--profile", str(profile), *extra).start()
        try:
            assert _redelivered_within(broker.port, 0.6) is expected, extra
        finally:
            broker.terminate()
    profile.write_text('extends = "document"\n[timing]\nno_such_timer = 1\n')
    r = wirecheck("serve", "--protocol", "blipmq", "--port", "0", "--profile", str(profile), timeout=30)
    assert r.returncode == 2 and "[timing] 'no_such_timer' is not a setting the kit reads for blipmq" in r.stderr, \
        r.stderr


def test_serve_refuses_a_malformed_or_unknown_option():
    for option, reason in (("max_queue", "expected KEY=VALUE"), ("no_such=1", "unknown --option no_such")):
        r = wirecheck("serve", "--protocol", "blipmq", "--port", "0", "--option", option, timeout=30)
        assert r.returncode == 2 and reason in r.stderr, r.stderr


@pytest.mark.parametrize("protocol", ["vibemq", "micromessage2", "rabbitmq-stream", "signalr"])
def test_every_broker_names_an_unknown_option(protocol):
    # Each broker checks the names against its configuration (wirecheck/reference_impl/core/options.py):
    # the same refusal whatever the broker's settings are made of.
    r = wirecheck("serve", "--protocol", protocol, "--port", "0", "--option", "max_conections=5",
                  "--option", "no_such=1", timeout=30)
    assert r.returncode == 2, r.stderr
    assert ("unknown --option max_conections (did you mean max_connections?); unknown --option "
            f"no_such: the {protocol} broker has no setting of that name") in r.stderr, r.stderr


def test_check_narrows_to_the_paths_given_after_the_double_dash(tmp_path):
    """`wirecheck check --protocol P -- FILE` runs FILE's tests, not the whole suite beside it;
    pytest options alone (-k, -m) still run the suite, narrowed by them."""
    from wirecheck.cli.check import pytest_args, suite_dir
    from wirecheck.reference_impl.core import registry
    spec = registry.get("blipmq")
    one = os.path.join(suite_dir(spec), "test_handshake.py")
    argv = pytest_args(spec, None, None, None, None, None, None, False, [one + "::test_auth_twice"])
    assert suite_dir(spec) not in argv and argv[-1] == one + "::test_auth_twice"
    argv = pytest_args(spec, None, None, None, None, None, None, False, ["-k", "handshake"])
    assert argv[0] == suite_dir(spec)
