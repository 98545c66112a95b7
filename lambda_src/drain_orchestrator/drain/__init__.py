"""Pure drain logic: options, pod classification (kubectl semantics), planning and the drain report.

Nothing in this package performs I/O; the Kubernetes side lives in ``drain_orchestrator.kube``.
"""
