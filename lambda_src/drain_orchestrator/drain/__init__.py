"""Pure drain logic: options, pod classification (kubectl semantics), planning and the drain report.

Nothing in this package performs I/O; the drain loop that acts on it is ``drain_orchestrator.engine``, the API calls
are in ``drain_orchestrator.kube``.
"""
