from __future__ import annotations

import pytest

from drain_orchestrator.events import Ignored, Interruption, parse_event
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.ownership import Decision, Reason, decide, decide_ignored, needs_asg_tags, with_node
from drain_orchestrator.settings import Settings
from testbed import samples

IID = samples.SAMPLE_INSTANCE


def _event(name: str = "asg-terminate.json") -> Interruption:
    event = parse_event(samples.load(name))
    assert isinstance(event, Interruption)
    return event


SAMPLE_HOOK = "drain"  # LifecycleHookName of the lifecycle samples in events/


def _settings(names: str = "prod", **env: str) -> Settings:
    return Settings.from_env({"CLUSTER_NAMES": names, "LIFECYCLE_HOOK_NAMES": SAMPLE_HOOK, **env})


def _facts(
    tags: dict[str, str], asg_tags: dict[str, str] | None = None, asg: str | None = "prod-nodes"
) -> InstanceFacts:
    return InstanceFacts(IID, "running", "ip-10-0-1-23.ec2.internal", "us-east-1a", tags, asg, asg_tags)


@pytest.mark.parametrize(
    "tags",
    [
        {"kubernetes.io/cluster/prod": "owned"},
        {"kubernetes.io/cluster/prod": "shared"},
        {"eks:cluster-name": "prod"},
    ],
)
def test_built_in_instance_tags_make_an_instance_owned(tags: dict[str, str]) -> None:
    d = decide(IID, _facts(tags), _settings(), _event())
    assert d == Decision(IID, True, "prod", Reason.OWNED_INSTANCE_TAG, "drain")


def test_another_clusters_instance_is_skipped_and_names_that_cluster() -> None:
    d = decide(IID, _facts({"eks:cluster-name": "staging"}), _settings(), _event())
    assert (d.owned, d.cluster, d.reason, d.action) == (False, "staging", Reason.OTHER_CLUSTER, "skip")


def test_unknown_instance() -> None:
    assert decide(IID, None, _settings(), _event()) == Decision(IID, False, None, Reason.UNKNOWN_INSTANCE, "skip")


def test_asg_tags_decide_only_when_instance_tags_do_not() -> None:
    facts = _facts({"Name": "node"})
    assert needs_asg_tags(facts, _settings())
    with_asg = facts.with_asg_tags({"kubernetes.io/cluster/prod": "owned"})
    assert not needs_asg_tags(with_asg, _settings())
    assert decide(IID, with_asg, _settings(), _event()).reason == Reason.OWNED_ASG_TAG
    # instance tags naming another cluster decide: the ASG's tags are neither needed nor consulted
    other = _facts({"kubernetes.io/cluster/staging": "owned"}, asg_tags={"kubernetes.io/cluster/prod": "owned"})
    assert not needs_asg_tags(_facts({"kubernetes.io/cluster/staging": "owned"}), _settings())
    assert decide(IID, other, _settings(), _event()).reason == Reason.OTHER_CLUSTER


def test_no_asg_means_no_asg_lookup_and_untagged() -> None:
    facts = _facts({}, asg=None)
    assert not needs_asg_tags(facts, _settings())
    assert decide(IID, facts, _settings(), _event()).reason == Reason.UNTAGGED


def test_cluster_tag_with_a_value_that_does_not_count_is_a_mismatch() -> None:
    facts = _facts({"kubernetes.io/cluster/prod": "yes"}, asg_tags={})
    d = decide(IID, facts, _settings(), _event())
    assert (d.owned, d.reason) == (False, Reason.TAG_VALUE_MISMATCH)


def test_star_serves_whatever_cluster_the_tags_name() -> None:
    d = decide(IID, _facts({"eks:cluster-name": "anything"}), _settings("*"), _event())
    assert (d.owned, d.cluster) == (True, "anything")


def test_two_served_clusters_on_one_instance_is_ambiguous_and_touches_nothing() -> None:
    tags = {"kubernetes.io/cluster/a": "owned", "kubernetes.io/cluster/b": "shared"}
    d = decide(IID, _facts(tags), _settings("a,b"), _event())
    assert (d.owned, d.reason, d.action) == (False, Reason.AMBIGUOUS_CLUSTER, "skip")
    # with only one of them served there is no ambiguity
    assert decide(IID, _facts(tags), _settings("b"), _event()).cluster == "b"


def test_custom_tag_key_whose_value_names_the_cluster() -> None:
    s = _settings("prod,staging", OWNERSHIP_TAG="team/cluster")
    d = decide(IID, _facts({"team/cluster": "staging"}), s, _event())
    assert (d.owned, d.cluster, d.reason) == (True, "staging", Reason.OWNED_CUSTOM_TAG)
    d = decide(IID, _facts({"team/cluster": "other"}), s, _event())
    assert (d.owned, d.reason) == (False, Reason.OTHER_CLUSTER)


def test_custom_key_value_marker_and_its_mismatch() -> None:
    s = _settings("prod", OWNERSHIP_TAG="drain-orchestrator=enabled")
    owned = decide(IID, _facts({}, asg_tags={"drain-orchestrator": "enabled"}), s, _event())
    assert (owned.owned, owned.cluster, owned.reason) == (True, "prod", Reason.OWNED_CUSTOM_TAG)
    mismatch = decide(IID, _facts({"drain-orchestrator": "disabled"}, asg_tags={}), s, _event())
    assert (mismatch.owned, mismatch.reason) == (False, Reason.TAG_VALUE_MISMATCH)


def test_built_in_tags_win_over_the_custom_marker() -> None:
    s = _settings("prod", OWNERSHIP_TAG="drain-orchestrator=enabled")
    tags = {"eks:cluster-name": "staging", "drain-orchestrator": "enabled"}
    assert decide(IID, _facts(tags), s, _event()).reason == Reason.OTHER_CLUSTER


@pytest.mark.parametrize(
    ("sample", "env", "action"),
    [
        ("asg-terminate.json", {}, "drain"),
        ("asg-terminate-warm-pool.json", {}, "drain"),
        ("asg-launch.json", {}, "wait-ready"),
        ("asg-launch-warm-pool.json", {}, "complete-lifecycle"),
        ("spot-interruption-terminate.json", {}, "drain"),
        ("rebalance-recommendation.json", {}, "cordon"),
        ("rebalance-recommendation.json", {"ACTION_REBALANCE": "drain"}, "drain"),
        ("state-change-stopping.json", {"ACTION_STATE_CHANGE": "cordon"}, "cordon"),
        ("health-scheduled-change.json", {}, "drain"),
    ],
)
def test_owned_action_follows_kind_and_settings(sample: str, env: dict[str, str], action: str) -> None:
    d = decide(IID, _facts({"eks:cluster-name": "prod"}), _settings(**env), _event(sample))
    assert (d.owned, d.action) == (True, action)


def test_kind_configured_to_ignore() -> None:
    s = _settings(ACTION_REBALANCE="ignore")
    d = decide(IID, _facts({"eks:cluster-name": "prod"}), s, _event("rebalance-recommendation.json"))
    assert (d.owned, d.reason, d.action) == (True, Reason.KIND_IGNORED, "skip")


def test_owned_without_node_completes_the_hook_or_skips_without_one() -> None:
    owned = decide(IID, _facts({"eks:cluster-name": "prod"}), _settings(), _event())
    assert with_node(owned, "ip-10-0-1-23.ec2.internal", _event()).node == "ip-10-0-1-23.ec2.internal"
    no_node = with_node(owned, None, _event())
    assert (no_node.reason, no_node.action) == (Reason.NO_NODE, "complete-lifecycle")
    spot = _event("spot-interruption-terminate.json")
    assert with_node(decide(IID, _facts({"eks:cluster-name": "prod"}), _settings(), spot), None, spot).action == (
        "skip"
    )


def test_launch_waits_for_a_node_that_does_not_exist_yet() -> None:
    launch = _event("asg-launch.json")
    d = decide(IID, _facts({"eks:cluster-name": "prod"}), _settings(), launch)
    assert with_node(d, None, launch) == d


def test_not_owned_stays_not_owned_whatever_the_node() -> None:
    d = decide(IID, _facts({"eks:cluster-name": "staging"}), _settings(), _event())
    assert with_node(d, None, _event()) == d


def test_decisions_round_trip_and_ignored_events_explain_themselves() -> None:
    d = Decision(IID, True, "prod", Reason.NO_NODE, "complete-lifecycle")
    assert Decision.from_dict(d.to_dict()) == d
    ignored = parse_event(samples.load("state-change-running-ignored.json"))
    assert isinstance(ignored, Ignored)
    assert decide_ignored(ignored) == [Decision(IID, False, None, Reason.UNSUPPORTED_KIND, "skip")]


def test_reasons_are_documented() -> None:
    doc = (samples.EVENTS_DIR.parent / "docs" / "ownership.md").read_text()
    assert [r.value for r in Reason if f"`{r.value}`" not in doc] == []


# ---- only our lifecycle hooks ---------------------------------------------------------------------------------
OWNED = {"eks:cluster-name": "prod"}


@pytest.mark.parametrize("sample", ["asg-terminate.json", "asg-launch.json", "asg-terminate-warm-pool.json"])
def test_another_hook_on_an_owned_instance_is_not_ours_and_names_the_hook(sample: str) -> None:
    # the samples' hook is "drain"; this deployment answers only its own default hook
    s = Settings.from_env({"CLUSTER_NAMES": "prod"})
    d = decide(IID, _facts(OWNED), s, _event(sample))
    assert d == Decision(IID, True, "prod", Reason.HOOK_NOT_OURS, "skip", lifecycle_hook=SAMPLE_HOOK)
    assert d.to_dict()["lifecycle_hook"] == SAMPLE_HOOK
    assert Decision.from_dict(d.to_dict()) == d
    # no node either: still nothing to complete (an owned no-node decision would complete the hook)
    assert with_node(d, None, _event(sample)) == d


def test_the_default_hook_name_is_the_one_the_construct_creates() -> None:
    s = Settings.from_env({"CLUSTER_NAMES": "prod"})
    event = parse_event(
        samples.lifecycle_event(
            "asg-terminate.json", instance_id=IID, asg="prod-nodes", hook="drain-orchestrator", token=None
        )
    )
    assert isinstance(event, Interruption)
    assert decide(IID, _facts(OWNED), s, event) == Decision(IID, True, "prod", Reason.OWNED_INSTANCE_TAG, "drain")


def test_a_foreign_hook_decides_before_ownership_whoever_owns_the_instance() -> None:
    s = _settings(LIFECYCLE_HOOK_NAMES="node-drainer,drain-orchestrator")
    other = decide(IID, _facts({"eks:cluster-name": "staging"}), s, _event())
    assert (other.owned, other.cluster, other.reason, other.lifecycle_hook) == (
        False,
        "staging",
        Reason.HOOK_NOT_OURS,
        SAMPLE_HOOK,
    )
    assert decide(IID, None, s, _event()).reason is Reason.HOOK_NOT_OURS
    # events without a hook are not concerned
    assert decide(IID, _facts(OWNED), s, _event("spot-interruption-terminate.json")).reason is (
        Reason.OWNED_INSTANCE_TAG
    )


@pytest.mark.parametrize(("setting", "action"), [("drain", "drain"), ("cordon", "cordon"), ("ignore", "skip")])
def test_action_foreign_hook_opts_in_to_draining_an_owned_node_for_another_hook(setting: str, action: str) -> None:
    s = Settings.from_env({"CLUSTER_NAMES": "prod", "ACTION_FOREIGN_HOOK": setting})
    d = decide(IID, _facts(OWNED), s, _event())
    assert (d.owned, d.reason, d.action, d.lifecycle_hook) == (True, Reason.HOOK_NOT_OURS, action, SAMPLE_HOOK)
    # never for another cluster's instance, never for a launch hook (nothing to drain there)
    assert decide(IID, _facts({"eks:cluster-name": "staging"}), s, _event()).action == "skip"
    assert decide(IID, _facts(OWNED), s, _event("asg-launch.json")).action == "skip"
    # no node for it: nothing to drain, and the hook stays its owner's
    assert with_node(d, None, _event()).action == "skip"


# ---- other node controllers -----------------------------------------------------------------------------------
KARPENTER = {"kubernetes.io/cluster/prod": "owned", "eks:eks-cluster-name": "prod", "karpenter.sh/nodepool": "default"}
AUTO_MODE = {
    "kubernetes.io/cluster/prod": "owned",
    "eks:eks-cluster-name": "prod",
    "eks:kubernetes-node-pool-name": "general-purpose",
    "eks:kubernetes-node-class-name": "default",
}
NODE_GROUP = {"eks:cluster-name": "prod", "eks:nodegroup-name": "workers"}
EC2_KINDS = [
    "spot-interruption-terminate.json",
    "rebalance-recommendation.json",
    "state-change-stopping.json",
    "health-scheduled-change.json",
]


@pytest.mark.parametrize("sample", EC2_KINDS)
@pytest.mark.parametrize(
    ("tags", "reason"), [(KARPENTER, Reason.MANAGED_BY_KARPENTER), (AUTO_MODE, Reason.MANAGED_BY_AUTO_MODE)]
)
def test_karpenter_and_auto_mode_instances_are_left_to_them(sample: str, tags: dict[str, str], reason: Reason) -> None:
    d = decide(IID, _facts(tags, asg=None), _settings(), _event(sample))
    assert (d.owned, d.cluster, d.reason, d.action) == (True, "prod", reason, "skip")


@pytest.mark.parametrize(
    ("tags", "opt_in", "action"),
    [(KARPENTER, "karpenter", "drain"), (AUTO_MODE, "auto-mode", "drain"), (KARPENTER, "auto-mode", "skip")],
)
def test_drain_controller_managed_nodes_opts_in(tags: dict[str, str], opt_in: str, action: str) -> None:
    s = _settings(DRAIN_CONTROLLER_MANAGED_NODES=opt_in)
    d = decide(IID, _facts(tags, asg=None), s, _event("spot-interruption-terminate.json"))
    assert d.action == action
    assert d.reason is (Reason.OWNED_INSTANCE_TAG if action == "drain" else Reason.MANAGED_BY_KARPENTER)


def test_the_v1_cluster_name_tag_alone_names_the_cluster() -> None:
    d = decide(IID, _facts({"eks:eks-cluster-name": "prod"}, asg=None), _settings(), _event())
    assert (d.owned, d.reason) == (True, Reason.OWNED_INSTANCE_TAG)


@pytest.mark.parametrize(
    ("sample", "reason", "action"),
    [
        ("rebalance-recommendation.json", Reason.MANAGED_BY_NODE_GROUP, "skip"),
        ("spot-interruption-terminate.json", Reason.OWNED_INSTANCE_TAG, "drain"),
        ("state-change-stopping.json", Reason.OWNED_INSTANCE_TAG, "drain"),
        ("health-scheduled-change.json", Reason.OWNED_INSTANCE_TAG, "drain"),
        ("asg-terminate.json", Reason.OWNED_INSTANCE_TAG, "drain"),
    ],
)
def test_managed_node_groups_are_left_only_their_rebalance_recommendations(
    sample: str, reason: Reason, action: str
) -> None:
    d = decide(IID, _facts(NODE_GROUP), _settings(), _event(sample))
    assert (d.owned, d.reason, d.action) == (True, reason, action)
    opted = decide(
        IID, _facts(NODE_GROUP), _settings(DRAIN_CONTROLLER_MANAGED_NODES="managed-node-group"), _event(sample)
    )
    assert opted.reason is Reason.OWNED_INSTANCE_TAG


def test_a_controller_tag_on_the_asg_counts_too_and_kind_ignored_stays_first() -> None:
    facts = _facts({"Name": "n"}).with_asg_tags({"kubernetes.io/cluster/prod": "owned", "eks:nodegroup-name": "w"})
    d = decide(IID, facts, _settings(), _event("rebalance-recommendation.json"))
    assert (d.reason, d.action) == (Reason.MANAGED_BY_NODE_GROUP, "skip")
    ignored = decide(IID, facts, _settings(ACTION_REBALANCE="ignore"), _event("rebalance-recommendation.json"))
    assert ignored.reason is Reason.KIND_IGNORED
