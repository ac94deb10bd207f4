"""Sentences and notes both halves of the RabbitMQ Stream catalogue quote (rabbitmq_stream.py,
rabbitmq_stream_consuming.py)."""

_CLIENT = "client behaviour: a server-facing suite cannot observe it (client conformance mode)"
_NOTES = "SPEC_NOTES.md, RabbitMQ Stream"
_REAL_SERVER_RULES = "The real server is the authority where the document errs:"
_STREAM_DOES_NOT_EXIST = "Stream does not exist 2"
