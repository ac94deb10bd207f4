"""The network fuzzer (wirecheck fuzz --target/--serve/--command): recorded client sessions as
seeds (seeds.py), structure-aware mutations (mutate.py, code_fields.py), each case sent and
judged (fuzzer.py, io.py, websocket.py), the target watched for spins and growth (health.py),
what it finds replayed on fresh targets (replay.py) and filed (findings.py)."""
