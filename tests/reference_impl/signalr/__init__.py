"""The SignalR codec, HTTP transport, session, broker, observer; real clients."""
