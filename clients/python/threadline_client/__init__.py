"""Python client for the Threadline sidecar, and the terminal commands built on it."""

from .client import RpcError, ThreadlineClient, server_command

__all__ = ["RpcError", "ThreadlineClient", "server_command"]
