"""Captures: the pcap/pcapng reader and writer (pcapfile.py), TCP reassembly (tcpflows.py), decode
--pcap (decode.py), the recording relay (relay.py) and replay (replay.py, replay_flow.py,
replay_rules.py)."""
