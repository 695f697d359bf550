"""Peer servers and direct-call references the bench compares Threadline with.

Each is a standalone script (run by path); they share ``peer_script``.
"""
