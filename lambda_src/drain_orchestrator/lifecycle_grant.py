"""Would the function's IAM policy let it heartbeat and complete lifecycle actions on this group? Pure.

The construct (infra/permissions.py) grants autoscaling:RecordLifecycleActionHeartbeat and
autoscaling:CompleteLifecycleAction on a condition on the group's tags: one statement per rule below. Ownership can
also come from the instance's own tags, which no IAM condition on the group can see: such an instance is drained,
but its group's hook cannot be answered. `explain` and `status` warn about it ahead of time (this module), and at
run time the first AccessDenied ends the drain with `lifecycle-access-denied`. The construct never imports this
package, so tests/infra/test_lifecycle_grant.py evaluates the synthesized policy against this rule.
"""

from __future__ import annotations

from drain_orchestrator.ownership import CLUSTER_TAG_PREFIX, CLUSTER_TAG_VALUES, EKS_CLUSTER_NAME_TAG
from drain_orchestrator.settings import Settings


def lifecycle_granted(group_tags: dict[str, str], settings: Settings) -> bool:
    """True when one of the policy's lifecycle statements matches the group's tags: the cluster tag
    (``kubernetes.io/cluster/<served>`` = owned | shared), ``eks:cluster-name`` = a served cluster, or
    OWNERSHIP_TAG as the deployment sets it (key=value: that value; key: a served cluster's name)."""
    for key, value in group_tags.items():
        cluster = key[len(CLUSTER_TAG_PREFIX) :]
        if key.startswith(CLUSTER_TAG_PREFIX) and value in CLUSTER_TAG_VALUES and cluster and settings.serves(cluster):
            return True
    named = group_tags.get(EKS_CLUSTER_NAME_TAG, "")
    if named and settings.serves(named):
        return True
    rule = settings.ownership_tag
    if rule is not None and rule.key in group_tags:
        value = group_tags[rule.key]
        return value == rule.value if rule.value is not None else bool(value) and settings.serves(value)
    return False


def denial_warning(group: str, group_tags: dict[str, str], settings: Settings) -> str | None:
    """What `explain` and `status` say about an owned instance whose group the policy would not let the function
    answer (None: it would)."""
    if lifecycle_granted(group_tags, settings):
        return None
    wanted = [f"{CLUSTER_TAG_PREFIX}<cluster>=owned|shared", f"{EKS_CLUSTER_NAME_TAG}=<cluster>"]
    if settings.ownership_tag is not None:
        tag = settings.ownership_tag
        wanted.append(str(tag) if tag.value is not None else f"{tag.key}=<cluster>")
    return (
        f"group {group} carries none of the tags the function's IAM policy requires for lifecycle calls "
        f"({', '.join(wanted)}): its heartbeats and completion would be denied (lifecycle-access-denied); "
        "tag the group, or use the construct's ownership rules"
    )
