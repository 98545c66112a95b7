"""A drain held for 90 s while etcd is compacted ten times a second (testbed/etcd_compaction.py), through the
Lambda on the real bed with real waits, reaches its verdict with its requests bounded.

The bed is this file's own: its apiserver serves the resources the held drain watches (pods, poddisruptionbudgets,
nodes) from etcd rather than from its watch cache (``--watch-cache-sizes=<resource>#0``). On kube-apiserver 1.35 a
cached watch is answered from a window that moves with its resource's writes, not with etcd's compactions; from
etcd, a watch from a version older than the last compaction is answered 410 (an ERROR event), as a busy cluster's
cache answers one whose window has moved on. Every version the drain reads ages past a compaction within a tenth of
a second, so a watch it opened from an older one would meet 410. A held drain's passes read fresh versions: each
watches from a LIST or a write of a moment ago, and a later pass opens no watch of the node from its old version
(the cordon it reads already carries the witness). So it meets 410 only where a version ages within a pass (a
compaction between a LIST and the watch from it), and each costs one fresh read: how a drain reads on after 410 is
shown deterministically by tests/integration/test_watch_resume.py.

What it shows: every resourceVersion the drain read is soon compacted away and the apiserver knows it (a LIST at
the hold's first version is refused 410 by the end), the drain reaches its verdict once the budget lifts, and its
LISTs, watches and 410s (each pass logs ``versions_gone``, the watches its server answered 410; the audit log has
the requests refused 410) stay bounded by its passes, counted from the apiserver's audit log: never a re-list loop.
The hold's length is what gives it passes: six times the cap on a held drain's waits (90 s, waits capped at 15 s),
each pass under some sixty compactions, so a re-list per compaction would break the bounds on its requests."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.etcd_compaction import Compactor
from testbed.kube import KubeScenario
from tests.beds import own_bed
from tests.integration.audit_support import audit_offset, by_verb_and_resource, function_requests
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import (
    assert_completed_by_function,
    blue_asg_node,
    hold_with_pdb,
    instance_summary,
    measure,
    relax_pdb_after,
    terminate_event,
)

pytestmark = [pytest.mark.integration, pytest.mark.long_running]
# what the scenario depends on is the ratios: passes in the hold (hold / held wait cap) and compactions a pass
HELD_RECHECK_MAX_SECONDS = 15
HOLD_SECONDS = 6 * HELD_RECHECK_MAX_SECONDS
COMPACT_EVERY_SECONDS = 0.1
# writes to etcd before each compaction (testbed/etcd_compaction.py churn): the revision moves between any read and
# the next compaction, so a watch opened from a version read a compaction ago is refused, not only after evictions
CHURN_WRITES = 3
# the resources the held drain watches (its node's pods, their budgets, the node), served by the apiserver from etcd
# instead of its watch cache: a watch resumed from a version older than etcd's last compaction is then told 410
WATCHED_FROM_ETCD = "--watch-cache-sizes=pods#0,poddisruptionbudgets.policy#0,nodes#0"


@pytest.fixture(scope="module")
def testbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    """A bed of this file's own: its apiserver watches the drain's resources from etcd."""
    with own_bed(tmp_path_factory, [WATCHED_FROM_ETCD]) as bed:
        yield bed


@pytest.mark.timeout(HOLD_SECONDS + 600)
def test_a_held_drain_under_etcd_compaction_reaches_its_verdict_with_requests_bounded_by_its_passes(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    lam.configure(
        "blue",
        DEADLINE_ASG_TERMINATE_SECONDS=str(HOLD_SECONDS + 240),
        FORCE_DELETE_ON_DEADLINE="false",
        # several passes in the hold: each resumes what the one before watched
        HELD_RECHECK_MAX_SECONDS=str(HELD_RECHECK_MAX_SECONDS),
    )
    offset = audit_offset(testbed)
    first = k8s.core.list_namespaced_pod(k8s.ns).metadata.resource_version  # a version of the hold's start
    with Compactor(testbed, COMPACT_EVERY_SECONDS, churn=CHURN_WRITES) as compactor:
        relax = relax_pdb_after(k8s, "web", HOLD_SECONDS)
        started = time.time()
        run = lam.run(terminate_event(aws, iid), timeout=HOLD_SECONDS + 360, skip_time=False)
        ended = time.time()
        relax.outcome(timeout=60)
    inst = instance_summary(run)
    assert inst["result"] == "drained", inst
    assert_completed_by_function(aws, iid, "CONTINUE")
    assert ended - started >= HOLD_SECONDS
    # ten a second asked; a compaction waits until etcd applied it, which on a loaded machine takes seconds too:
    # at least one every 15 s (the apiserver's poll of compact_rev_key) past the hold's first version (the first
    # compaction may come before anything was written after it: it then compacts at that very version)
    past = [r for r in compactor.revisions if r > int(first)]
    assert len(past) >= HOLD_SECONDS / 15, (len(compactor.revisions), int(first), compactor.errors[-5:])
    with pytest.raises(ApiException) as too_old:  # the apiserver learnt of the compactions, not etcd alone
        k8s.core.list_namespaced_pod(k8s.ns, resource_version=first, resource_version_match="Exact")
    assert too_old.value.status == 410, too_old.value

    requests = function_requests(testbed, offset)
    logged = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{") and '"drain pass"' in line]
    passes = len(logged)
    watch_gone = sum(int(line["versions_gone"]) for line in logged)  # watches its server ended with 410
    counted = by_verb_and_resource(requests)
    gone = Counter(_what(e) for e in requests if (e.get("responseStatus") or {}).get("code") == 410)  # refused 410
    lists = sum(n for k, n in counted.items() if k.startswith(("list ", "list+watch ")))  # a streamed list is both
    watches = sum(n for k, n in counted.items() if k.startswith(("watch ", "list+watch ")))
    measure(
        lam,
        "long-hold-compaction",
        seconds=ended - started,
        compactions=len(compactor.revisions),
        passes=passes,
        lists=lists,
        watches=watches,
        gone_410=sum(gone.values()),
        watch_410=watch_gone,
    )
    seen = {"passes": passes, "watch_gone": watch_gone, "gone": dict(gone), "counted": dict(counted)}
    print(json.dumps(seen, sort_keys=True))  # captured: shown by `pytest -rA`, with xdist too
    met = watch_gone + sum(gone.values())  # versions compacted away between a read and the watch from it
    # a pass LISTs the node's pods and its budgets (and again at a budget's turn, or after a 410); the verdict's
    # gates and claims a few more: bounded by the passes, not by the compactions (some sixty a pass)
    assert passes >= 4, passes
    # the node is watched for the witness in the first pass only (a later one finds the taint on the node it reads):
    # no watch from the node's own, long compacted version at every pass
    assert counted.get("watch nodes", 0) <= 3, (passes, dict(counted), dict(gone))
    assert lists <= 6 * passes + 10, (passes, dict(counted), dict(gone))
    assert watches <= 4 * passes + 10, (passes, dict(counted), dict(gone))
    assert met <= 2 * passes + 4, (passes, watch_gone, dict(gone))


def _what(event: dict[str, Any]) -> str:
    ref = event.get("objectRef") or {}
    return f"{event['verb']} {ref.get('resource', '?')}"
