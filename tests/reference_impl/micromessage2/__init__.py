"""The Micromessage2 codec, session, observer and scapy layer."""
