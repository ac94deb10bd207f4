"""``wirecheck serve`` (a reference broker; with ``--check-clients``, checking the clients that
connect to it) and ``wirecheck record`` (a recording relay in front of any server)."""
from __future__ import annotations

import asyncio
import json
import sys

from wirecheck.cli.support import EXIT_HARNESS, check_profile, host_port_arg, key_values
from wirecheck.conformance.cli_signals import stopped_status, until_stopped
from wirecheck.reference_impl.core.options import UnknownOption


def _option_value(text: str):
    """A broker option's value: a JSON literal (``null``, ``30``, ``0.5``, ``true``) as that,
    anything else as the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


#: Protocols with authentication, and the well-known credentials their reference broker accepts
#: when none are given: fine on loopback (as RabbitMQ's guest user), refused on any other
#: address (docs/brokers.md, "Limits and security defaults").
DEFAULT_CREDENTIALS = {
    "blipmq": "API key 'dev-key'",
    "vibemq": "password 'vibemq'",
    "rabbitmq-stream": "user 'guest' / password 'guest'",
}


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine ("" and 0.0.0.0 / ::
    listen on every interface; a name other than localhost may resolve anywhere)."""
    import ipaddress
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _serve_security(spec, args, options: dict) -> str | None:
    """Warnings for a listener reachable from other machines; an error (returned) when it
    would accept well-known default credentials or anonymous clients there."""
    if is_loopback(args.host):
        return None
    print(f"wirecheck serve: warning: listening on {args.host or 'every interface'}, reachable "
          "from other machines; the reference broker is a test peer, not a production server",
          file=sys.stderr)
    if spec.id in DEFAULT_CREDENTIALS:
        if not args.api_key:
            return (f"the default credentials ({DEFAULT_CREDENTIALS[spec.id]}) are accepted on "
                    "loopback only: give --api-key to listen on another address")
        if options.get("require_auth") is False:
            return "require_auth=false is allowed on loopback only"
    else:
        print(f"wirecheck serve: warning: {spec.id} has no authentication: anyone who reaches "
              f"{args.host} can use this broker", file=sys.stderr)
    return None


def _broker_error(spec, exc: Exception, from_profile=()) -> str:
    """Why the broker could not be made, in the user's terms: a setting its config has no
    field for (reference_impl/core/options.py) is an ``--option`` or a ``[timing]`` value of
    the profile."""
    if isinstance(exc, UnknownOption):
        what = "; ".join((f"the profile's [timing] value {name}" if name in from_profile
                          else f"unknown --option {name}")
                         + (f" (did you mean {near}?)" if (near := exc.near(name)) else "")
                         for name in exc.names)
        return (f"{what}: the {spec.id} broker has no setting of that name (docs/brokers.md: "
                "\"Every broker\")")
    return str(exc)


def cmd_serve(args) -> int:
    spec = args.protocol
    if (err := check_profile(spec, args.profile)) is not None:
        print(f"wirecheck serve: {err}", file=sys.stderr)
        return EXIT_HARNESS
    port = spec.default_port if args.port is None else args.port
    try:
        options = {k: _option_value(v) for k, v in
                   key_values(args.option or [], "--option", "ack_timeout=30").items()}
    except ValueError as exc:
        print(f"wirecheck serve: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    if (err := _serve_security(spec, args, options)) is not None:
        print(f"wirecheck serve: {err}", file=sys.stderr)
        return EXIT_HARNESS
    # One descriptor per connection: the brokers allow thousands (max_connections).
    from wirecheck.reference_impl.core.server import raise_open_file_limit
    raise_open_file_limit()
    if args.fsync:
        options["fsync"] = args.fsync
    timing_keys: set[str] = set()
    if args.profile:
        from wirecheck.conformance.profiles import load_profile
        profile = load_profile(spec, args.profile)
        options["profile"] = profile.base
        # The profile's [timing] is the behaviour the suite will wait for: the broker runs
        # with it, unless an --option says otherwise. Its names are the brokers' settings.
        for key, value in profile.timing.items():
            if key not in options:
                options[key] = value
                timing_keys.add(key)
    if args.raw_port is not None:
        if not spec.extra_ports:                  # only a protocol with a second transport
            print(f"wirecheck serve: --raw-port does not apply to {spec.id}", file=sys.stderr)
            return EXIT_HARNESS
        options["raw_port"] = args.raw_port
    if args.check_clients:
        return _serve_checking_clients(spec, args, port, options, timing_keys)
    if (args.scenario is not None or args.duration is not None or args.report is not None
            or args.scenario_option):
        print("wirecheck serve: --scenario, --scenario-option, --duration and --report go with "
              "--check-clients", file=sys.stderr)
        return EXIT_HARNESS
    capture = None
    listen_host, listen_port = args.host, port
    if args.capture:
        # The broker listens on a free loopback port; relays on the public ports record every
        # connection (conformance/captures/relay.py).
        from wirecheck.conformance.captures.relay import CaptureFile
        if spec.extra_ports:
            options["raw_port"] = 0
        try:
            capture = CaptureFile(args.capture)
        except OSError as exc:
            print(f"wirecheck serve: cannot write {args.capture}: {exc}", file=sys.stderr)
            return EXIT_HARNESS
        listen_host, listen_port = "127.0.0.1", 0
    try:
        broker = spec.make_broker(listen_host, listen_port, data_dir=args.data_dir,
                                  api_keys=tuple(args.api_key or ()), **options)
    except (ValueError, TypeError, OSError) as exc:       # ValueError: UnknownOption too
        print(f"wirecheck serve: {_broker_error(spec, exc, timing_keys)}", file=sys.stderr)
        return EXIT_HARNESS

    async def main() -> None:
        relays = []
        try:
            await broker.start()
            if capture is not None:
                from wirecheck.conformance.captures.relay import relay_broker
                raw = args.raw_port if args.raw_port is not None else (port + 1 if port else 0)
                relays = await relay_broker(capture, broker, args.host, (port, raw))
        except OSError as exc:
            await broker.stop()
            print(f"wirecheck serve: cannot listen on {args.host}:{port} (--port): {exc}", file=sys.stderr)
            raise SystemExit(2) from None       # a usage error: the option named
        public_port = relays[0].port if relays else broker.port
        print(f"{spec.id} reference broker listening on {args.host}:{public_port}"
              + (f" (data dir {args.data_dir})" if args.data_dir else " (in memory)")
              + (f", recording to {args.capture}" if capture is not None else ""), flush=True)
        if spec.id in DEFAULT_CREDENTIALS and not args.api_key:
            print(f"{spec.id} accepts the default credentials ({DEFAULT_CREDENTIALS[spec.id]}); "
                  "--api-key replaces them", flush=True)
        if getattr(broker, "raw_port", None) is not None:       # a second transport (SignalR)
            raw_port = relays[1].port if len(relays) > 1 else broker.raw_port
            path = getattr(broker, "hub_path", "")
            print(f"{spec.id} serving http://{args.host}:{public_port}{path} and raw TCP on "
                  f"{args.host}:{raw_port}", flush=True)
        await until_stopped()
        for relay in relays:
            await relay.stop()
        await broker.stop()

    try:
        asyncio.run(main())
    finally:
        if capture is not None:
            capture.close()
            print(f"{capture.connections} connection(s) recorded in {args.capture}", flush=True)
    return stopped_status()


def _serve_checking_clients(spec, args, port: int, options: dict, timing_keys=()) -> int:
    """``serve --check-clients``: the broker on a private loopback port, checking relays on the
    public ones (conformance/clients/serve_check.py)."""
    from wirecheck.conformance.clients.scenarios import scenarios, shaper_factory
    from wirecheck.conformance.clients.serve_check import serve as serve_checked
    args.scenario = args.scenario or "none"
    known = scenarios(spec.id)
    if args.scenario not in known:
        print(f"wirecheck serve: unknown scenario {args.scenario!r} for {spec.id}; known: {', '.join(known)}",
              file=sys.stderr)
        return EXIT_HARNESS
    if args.duration is not None and args.duration <= 0:
        print("wirecheck serve: --duration must be > 0", file=sys.stderr)
        return EXIT_HARNESS
    args.scenario_options = {}
    for item in args.scenario_option or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"wirecheck serve: --scenario-option wants KEY=VALUE, not {item!r}", file=sys.stderr)
            return EXIT_HARNESS
        args.scenario_options[key.strip()] = value.strip()
    try:
        shaper_factory(args.scenario, args.scenario_options, spec.id)
    except ValueError as exc:
        print(f"wirecheck serve: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    if spec.extra_ports:
        options["raw_port"] = 0
    try:
        broker = spec.make_broker("127.0.0.1", 0, data_dir=args.data_dir,
                                  api_keys=tuple(args.api_key or ()), **options)
    except (ValueError, TypeError, OSError) as exc:
        print(f"wirecheck serve: {_broker_error(spec, exc, timing_keys)}", file=sys.stderr)
        return EXIT_HARNESS
    if spec.extra_ports:
        args.raw_port = args.raw_port if args.raw_port is not None else (port + 1 if port else 0)
    return serve_checked(spec, broker, args, port)


def cmd_record(args) -> int:
    """A recording relay in front of any server (conformance/captures/relay.py)."""
    from wirecheck.conformance.captures.relay import CaptureFile, CaptureProxy
    try:
        listen, upstream = host_port_arg(args.listen), host_port_arg(args.upstream)
    except ValueError as exc:
        print(f"wirecheck record: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    try:
        capture = CaptureFile(args.capture)
    except OSError as exc:
        print(f"wirecheck record: cannot write {args.capture}: {exc}", file=sys.stderr)
        return EXIT_HARNESS

    async def main() -> None:
        try:
            proxy = await CaptureProxy(capture, upstream, *listen).start()
        except OSError as exc:
            print(f"wirecheck record: cannot listen on {args.listen} (--listen): {exc}", file=sys.stderr)
            raise SystemExit(2) from None       # a usage error: the option named
        print(f"recording {proxy.host}:{proxy.port} -> {upstream[0]}:{upstream[1]} into {args.capture}",
              flush=True)
        await until_stopped(args.duration)
        await proxy.stop()

    try:
        asyncio.run(main())
    finally:
        capture.close()
        print(f"{capture.connections} connection(s) recorded in {args.capture}", flush=True)
    return stopped_status()
