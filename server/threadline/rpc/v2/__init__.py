"""ACP v2 on a connection that negotiated it: its routes, its projection, the
``_meta`` move. The engine is the same for both versions (``docs/protocol.md``)."""
