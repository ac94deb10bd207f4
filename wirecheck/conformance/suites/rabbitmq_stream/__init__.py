"""Black-box suite for RabbitMQ Stream (rabbitmq-stream-protocol.adoc; SPEC_NOTES.md)."""
