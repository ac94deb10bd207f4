"""Quick versions of soak/'s hardening runs."""
