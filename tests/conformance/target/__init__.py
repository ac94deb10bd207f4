"""The target: connections, its process, health, crash watching, the preflight."""
