"""Client checking: check-client, its scenarios, the scripted brokers and the drivers."""
