"""Long-running hardening runs (``make soak``): hostile targets against the kit, hostile
clients against the reference brokers, kill -9 durability, and load. Each module runs a
quick variant for ``make test`` (tests/soak/test_hardening_*.py) and a full one for ``make soak``;
both write JSON results."""
