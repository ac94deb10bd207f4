"""The live fuzzer over the wire: mutation, findings, planted targets, campaigns."""
