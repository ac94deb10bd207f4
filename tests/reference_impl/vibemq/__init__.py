"""The VibeMQ codec, decompression, session, broker, client and scapy layer."""
