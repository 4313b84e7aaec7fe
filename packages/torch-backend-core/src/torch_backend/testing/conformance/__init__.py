"""The conformance suite: one test file per subsystem; run it with `python -m torch_backend.testing NAME`."""
