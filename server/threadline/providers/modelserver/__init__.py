"""One local model for every editor: a GGUF model served by one supervised server per
machine (per ``THREADLINE_HOME``), shared by every sidecar.

* :mod:`.spec` — which server, and its command line (``llama_cpp.server`` or
  ``llama-server``);
* :mod:`.home` — the server's folder: the record (port, pid, state) under a file lock;
* :mod:`.launcher` — the sidecar side: start a keeper if none runs, wait for ready;
* :mod:`.keeper` — the supervising process: readiness, restarts within a limit, idle stop;
* :mod:`.slots` — N slots and a fair queue across processes (lock files);
* :mod:`.watchdog` — liveness by progress (streamed bytes or CPU time) during a request;
* :mod:`.provider` — the ``Provider`` that ties them to the OpenAI-compatible client;
* :mod:`.status` — what each server is doing, for ``threadline models``;
* :mod:`.warmserver`, :mod:`.keptstates` — llama_cpp.server with a prompt cache whose
  bound counts what it keeps, so several sessions keep their prefixes warm.
"""
