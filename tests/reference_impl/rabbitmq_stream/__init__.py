"""The RabbitMQ Stream codec, chunks, store, session, SASL, observer; real clients."""
