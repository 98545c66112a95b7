"""The drain engine: the drain loop, eviction admission (budgets, retries, held pods) and surge before evict.

It decides with the pure core (``drain_orchestrator.drain``) and talks to the apiserver only through the adapters in
``drain_orchestrator.kube``, which never import it; it knows nothing of durable execution (``workflow/`` calls it
inside its steps).
"""
