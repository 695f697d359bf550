"""Commands the agent runs: ``run_command`` (``run_command.py``), in the client's
terminal (``client_terminal.py``) or in the sidecar (``runner.py``, output bounded by
``output.py``), confined by bubblewrap when it runs unasked (``confine.py``)."""
