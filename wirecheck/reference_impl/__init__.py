"""Reference implementations (codec, sans-IO session, broker, client) of every protocol."""
