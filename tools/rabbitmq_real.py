"""Start a real RabbitMQ (Debian's 3.10.8, stream plugin) on loopback for the project's tests,
tools (`make matrix`, the rich capture's recorder) and benchmarks.

``make real-peers`` installs the server. Each :class:`RealRabbitMQ` runs its own node as the
current user in a fresh temporary directory (config, plugins file, database, logs, ``HOME``
for the Erlang cookie), with its own loopback ports; entering the context returns once a full
stream-protocol handshake succeeds, leaving it stops the node and removes the directory.
"""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

from wirecheck.conformance.target.process import live_group_pids  # noqa: F401  (the tests use it from here too)

SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
INSTALL_HINT = "run `make real-peers` (installs Debian's rabbitmq-server)"

_counter = itertools.count(1)


def available() -> bool:
    """True when the RabbitMQ server of ``make real-peers`` is installed."""
    return os.access(SERVER, os.X_OK)


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _free_ports(host: str, n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = _free_port(host)
        if port not in ports:
            ports.append(port)
    return ports


# --- minimal stream-protocol client: just enough for the handshake ----------------------

def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _frame(key: int, body: bytes) -> bytes:
    """One frame: u32 size, u16 key, u16 version 1, body."""
    payload = struct.pack(">HH", key, 1) + body
    return struct.pack(">I", len(payload)) + payload


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def _read_frame(sock: socket.socket) -> tuple[int, int, bytes]:
    """Return (key, version, body after the version) of the next frame."""
    (size,) = struct.unpack(">I", _recv_exact(sock, 4))
    if size < 4:
        raise ConnectionError(f"frame size {size} is shorter than key + version")
    payload = _recv_exact(sock, size)
    key, version = struct.unpack_from(">HH", payload)
    return key, version, payload[4:]


def _expect_ok(sock: socket.socket, key: int, corr: int, what: str) -> bytes:
    """Read the response to request ``key``/``corr``; return the body after the code."""
    got_key, _, body = _read_frame(sock)
    if got_key != key | 0x8000 or len(body) < 6:
        raise ConnectionError(f"{what}: expected response key {key | 0x8000:#06x}, "
                              f"got key {got_key:#06x} body {body.hex()}")
    got_corr, code = struct.unpack_from(">IH", body)
    if got_corr != corr:
        raise ConnectionError(f"{what}: correlation id {got_corr}, expected {corr}")
    if code != 1:
        raise ConnectionError(f"{what}: response code {code}")
    return body[6:]


def stream_handshake(host: str, port: int, *, timeout: float = 5.0, user: str = "guest",
                     password: str = "guest", vhost: str = "/", create: str | None = None) -> dict[str, int]:
    """Connect and run PeerProperties, SaslHandshake, SaslAuthenticate (PLAIN), the Tune
    exchange and Open; return the server's tune offer ``{"frame_max", "heartbeat"}``.
    Raises ``OSError`` (``ConnectionError``, ``TimeoutError``) on any failure; every socket
    operation is bounded by ``timeout``."""
    try:
        return _handshake(host, port, timeout, user, password, vhost, create)
    except struct.error as exc:
        raise ConnectionError(f"malformed handshake response: {exc}") from exc


def _handshake(host: str, port: int, timeout: float, user: str, password: str,
               vhost: str, create: str | None = None) -> dict[str, int]:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        props = {"product": "wirecheck", "connection_name": "wirecheck-harness"}
        body = struct.pack(">Ii", 1, len(props))
        body += b"".join(_string(k) + _string(v) for k, v in props.items())
        sock.sendall(_frame(17, body))
        _expect_ok(sock, 17, 1, "PeerProperties")

        sock.sendall(_frame(18, struct.pack(">I", 2)))
        rest = _expect_ok(sock, 18, 2, "SaslHandshake")
        (count,) = struct.unpack_from(">i", rest)
        mechanisms, pos = [], 4
        for _ in range(count):
            (n,) = struct.unpack_from(">h", rest, pos)
            mechanisms.append(rest[pos + 2:pos + 2 + n].decode())
            pos += 2 + n
        if "PLAIN" not in mechanisms:
            raise ConnectionError(f"SaslHandshake: no PLAIN among {mechanisms}")

        secret = b"\0" + user.encode() + b"\0" + password.encode()
        sock.sendall(_frame(19, struct.pack(">I", 3) + _string("PLAIN")
                            + struct.pack(">i", len(secret)) + secret))
        _expect_ok(sock, 19, 3, "SaslAuthenticate")

        key, _, body = _read_frame(sock)
        if key != 20 or len(body) != 8:
            raise ConnectionError(f"expected Tune (key 20), got key {key:#06x} body {body.hex()}")
        frame_max, heartbeat = struct.unpack(">II", body)
        payload = struct.pack(">HHII", 0x8014, 1, frame_max, heartbeat)
        sock.sendall(struct.pack(">I", len(payload)) + payload)

        sock.sendall(_frame(21, struct.pack(">I", 4) + _string(vhost)))
        _expect_ok(sock, 21, 4, "Open")
        if create is not None:                      # Create (key 13): name, no arguments
            sock.sendall(_frame(13, struct.pack(">I", 5) + _string(create) + struct.pack(">i", 0)))
            _expect_ok(sock, 13, 5, "Create")
        return {"frame_max": frame_max, "heartbeat": heartbeat}


# --- the server ------------------------------------------------------------------------

class RealRabbitMQ:
    """A RabbitMQ node with the stream plugin on loopback, for one ``with`` block.

    ``host``, ``stream_port`` and ``amqp_port`` are set on construction; the user is
    guest/guest, the vhost ``/``. ``__enter__`` waits (at most ``start_timeout`` seconds)
    until a stream handshake succeeds; ``__exit__`` stops the node (SIGTERM to its process
    group, SIGKILL after ``stop_timeout`` seconds) and removes its directory."""

    def __init__(self, *, start_timeout: float = 90.0, stop_timeout: float = 10.0,
                 host: str = "127.0.0.1") -> None:
        self.host = host
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.stream_port, self.amqp_port, self.dist_port = _free_ports(host, 3)
        self.nodename = f"wirecheck-{os.getpid()}-{next(_counter)}@localhost"
        self.dir: str | None = None
        self.proc: subprocess.Popen | None = None
        self.pgid: int | None = None
        self.tune: dict[str, int] | None = None

    # context manager
    def __enter__(self) -> "RealRabbitMQ":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _write_files(self, d: str) -> dict[str, str]:
        conf = os.path.join(d, "rabbitmq.conf")
        with open(conf, "w") as f:
            f.write(f"listeners.tcp.default = {self.host}:{self.amqp_port}\n"
                    f"stream.listeners.tcp.1 = {self.host}:{self.stream_port}\n"
                    f"stream.advertised_host = {self.host}\n"
                    f"stream.advertised_port = {self.stream_port}\n")
        plugins = os.path.join(d, "enabled_plugins")
        with open(plugins, "w") as f:
            f.write("[rabbitmq_stream].\n")
        env_file = os.path.join(d, "rabbitmq-env.conf")
        open(env_file, "w").close()  # keep the host's /etc/rabbitmq/rabbitmq-env.conf out
        env = {k: v for k, v in os.environ.items() if not k.startswith("RABBITMQ_")}
        env.update({
            "HOME": d,
            "RABBITMQ_NODENAME": self.nodename,
            "RABBITMQ_CONFIG_FILE": conf,
            "RABBITMQ_CONF_ENV_FILE": env_file,
            "RABBITMQ_ADVANCED_CONFIG_FILE": os.path.join(d, "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": plugins,
            "RABBITMQ_MNESIA_BASE": os.path.join(d, "mnesia"),
            "RABBITMQ_LOG_BASE": os.path.join(d, "log"),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
        })
        return env

    def start(self) -> "RealRabbitMQ":
        if not available():
            raise RuntimeError(f"RabbitMQ server not found at {SERVER}: {INSTALL_HINT}")
        self.dir = tempfile.mkdtemp(prefix="wirecheck-rabbitmq-")
        env = self._write_files(self.dir)
        self.console = os.path.join(self.dir, "console.log")
        with open(self.console, "wb") as out:
            # Own session = own process group, so stop() reaches erl and its helpers.
            self.proc = subprocess.Popen([SERVER], env=env, cwd=self.dir, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.pgid = self.proc.pid
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"RabbitMQ exited with {self.proc.returncode} before it was "
                                   f"ready; console:\n{self._console_tail()}")
            left = max(0.1, min(5.0, deadline - time.monotonic()))
            try:
                self.tune = stream_handshake(self.host, self.stream_port, timeout=left)
                return
            except OSError as exc:
                last = exc
            time.sleep(0.25)
        raise TimeoutError(f"RabbitMQ stream port {self.host}:{self.stream_port} not ready "
                           f"after {self.start_timeout} s (last error: {last!r}); console:\n"
                           f"{self._console_tail()}")

    def _console_tail(self, n: int = 4000) -> str:
        try:
            with open(self.console, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return "(no console output)"

    def stop(self) -> None:
        """Stop the node: SIGTERM to its process group, SIGKILL to whatever of the group
        is still alive ``stop_timeout`` seconds later; then remove its directory."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                _signal_group(proc.pid, signal.SIGTERM)
                deadline = time.monotonic() + self.stop_timeout
                while time.monotonic() < deadline:
                    if proc.poll() is not None and not live_group_pids(proc.pid):
                        break
                    time.sleep(0.1)
                _signal_group(proc.pid, signal.SIGKILL)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait(self.stop_timeout)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
