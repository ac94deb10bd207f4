"""The conformance kit: the pytest plugin's parts, by role."""
