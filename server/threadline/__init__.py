"""Threadline: a stdio JSON-RPC sidecar that owns LLM agent sessions for editors."""

__version__ = "0.1.0"
