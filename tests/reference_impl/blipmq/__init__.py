"""The BlipMQ codec, session, broker, client, WAL and scapy layer."""
