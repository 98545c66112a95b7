"""The drain engine: one ``Drainer`` per drain of a node (engine/drainer.py), with the parts that own what it
remembers between passes (engine/parts.py): the drain loop, eviction admission (budget turns, retries, held pods)
and surge before evict.

It decides with the pure core (``drain_orchestrator.drain``) and talks to the apiserver only through the adapters in
``drain_orchestrator.kube``, which import nothing of it and never call back up (the only functions they take are
pure: what to write, computed from what a conditional write read, kube/node_marks.py; what they notice beside an
answer they keep for their caller to take, kube/client.py ``take_notices``); it knows nothing of durable execution
(``workflow/`` calls it inside its steps).
"""
