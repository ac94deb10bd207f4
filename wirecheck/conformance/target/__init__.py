"""The target a suite talks to: connections and transcripts (connection.py), the process the kit
starts (process.py), its health (run/health_reruns.py), crash watching (crashwatch.py), what it says of its
failures (evidence.py), the liveness probe and the preflight, the suite's WebSocket client."""
