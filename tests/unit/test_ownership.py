from __future__ import annotations

import pytest

from drain_orchestrator.events import Ignored, Interruption, parse_event
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.ownership import Decision, Reason, decide, decide_ignored, needs_asg_tags, with_node
from drain_orchestrator.settings import Settings
from tests import samples

IID = samples.SAMPLE_INSTANCE


def _event(name: str = "asg-terminate.json") -> Interruption:
    event = parse_event(samples.load(name))
    assert isinstance(event, Interruption)
    return event


def _settings(names: str = "prod", **env: str) -> Settings:
    return Settings.from_env({"CLUSTER_NAMES": names, **env})


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
