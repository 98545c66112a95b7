"""infra/template_sentinels.py and template_fold.py on small templates: sentinels become references, a value derived
from a sentinel is refused, a folded variant resolves back to itself (tests/infra/template_resolve.py), and so does
a value two parameters change, folded with their synth together."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from infra.template_fold import Variant, fold
from infra.template_sentinels import FoldError, check_same, check_whole, substitute

from tests.infra.template_resolve import resolve

SENTINELS: dict[str, str | int] = {"ClusterName": "zzclusterzz", "TimeoutSeconds": 777}


def synth(cluster: str, timeout: int, *, derived: bool = False, rule: bool = True) -> dict[str, Any]:
    """What a construct might write for a cluster and a timeout: a resource named after the cluster, the cluster in
    a string and in a policy's condition key, the timeout as a number (and, ``derived``, in milliseconds)."""
    entry = f"AccessEntry{cluster}1A2B3C4D"
    resources: dict[str, Any] = {
        "Fn": {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Timeout": timeout, "Environment": {"Variables": {"CLUSTER_NAMES": cluster}}},
            "Metadata": {"aws:cdk:path": "Stack/Fn/Resource"},
        },
        entry: {
            "Type": "AWS::EKS::AccessEntry",
            "Properties": {"ClusterName": cluster, "PrincipalArn": {"Fn::GetAtt": ["Role", "Arn"]}},
            "Metadata": {"aws:cdk:path": f"Stack/AccessEntry-{cluster}/Resource"},
        },
        "Policy": {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "PolicyDocument": {
                    "Statement": [
                        {
                            "Action": "autoscaling:CompleteLifecycleAction",
                            "Condition": {
                                "StringEquals": {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"}
                            },
                            "Resource": {"Fn::GetAtt": ["Fn", "Arn"]},
                        }
                    ]
                }
            },
            "Metadata": {"aws:cdk:path": "Stack/Policy/Resource"},
        },
        "Out": {"Type": "AWS::SSM::Parameter", "Properties": {"Value": {"Ref": entry}}},
    }
    if derived:
        resources["Fn"]["Properties"]["Environment"]["Variables"]["DEADLINE_MS"] = timeout * 1000
    if rule:
        resources["Rule"] = {"Type": "AWS::Events::Rule", "Properties": {"State": "ENABLED"}}
    return {"Resources": resources}


def test_sentinels_become_references_and_ids_name_the_parameter() -> None:
    template = substitute(synth("zzclusterzz", 777), SENTINELS)
    resources = template["Resources"]
    assert resources["Fn"]["Properties"]["Timeout"] == {"Ref": "TimeoutSeconds"}
    assert resources["Fn"]["Properties"]["Environment"]["Variables"]["CLUSTER_NAMES"] == {"Ref": "ClusterName"}
    assert "AccessEntryClusterName1A2B3C4D" in resources
    assert resources["Out"]["Properties"]["Value"] == {"Ref": "AccessEntryClusterName1A2B3C4D"}
    assert resources["AccessEntryClusterName1A2B3C4D"]["Metadata"]["aws:cdk:path"] == (
        "Stack/AccessEntry-{ClusterName}/Resource"
    )
    # a key cannot hold a reference: the policy becomes a substitution of its JSON text
    document = resources["Policy"]["Properties"]["PolicyDocument"]
    assert "${ClusterName}" in document["Fn::Sub"][0]


def test_resolving_the_substitution_gives_the_synth_of_the_value() -> None:
    template = substitute(synth("zzclusterzz", 777), SENTINELS)
    resolved = resolve({"Parameters": {"ClusterName": {}, "TimeoutSeconds": {}}, **template},
                       {"ClusterName": "prod", "TimeoutSeconds": 600})  # fmt: skip
    expected = synth("prod", 600)["Resources"]
    expected["AccessEntryClusterName1A2B3C4D"] = expected.pop("AccessEntryprod1A2B3C4D")
    expected["Out"]["Properties"]["Value"] = {"Ref": "AccessEntryClusterName1A2B3C4D"}
    for body in [*resolved["Resources"].values(), *expected.values()]:
        body.pop("Metadata", None)
    assert resolved["Resources"] == expected


def test_a_value_derived_from_a_sentinel_is_refused() -> None:
    alternates: dict[str, str | int] = {"ClusterName": "qqclusterqq", "TimeoutSeconds": 888}
    base = substitute(synth("zzclusterzz", 777), SENTINELS)
    check_same(base, substitute(synth("qqclusterqq", 888), alternates))  # written as it is: one template
    with pytest.raises(FoldError, match=r"Resources\.Fn\.Properties\.Environment\.Variables\.DEADLINE_MS"):
        check_same(
            substitute(synth("zzclusterzz", 777, derived=True), SENTINELS),
            substitute(synth("qqclusterqq", 888, derived=True), alternates),
        )


def test_a_folded_variant_resolves_to_itself() -> None:
    base = synth("prod", 600)
    without_rule = synth("prod", 600, rule=False)
    other_timeout = copy.deepcopy(base)
    other_timeout["Resources"]["Fn"]["Properties"]["Timeout"] = 900
    folded = fold(
        base,
        [Variant("Action", "ignore", without_rule), Variant("Mode", "slow", other_timeout)],
        {("Action", "ignore"): "ActionIsIgnore", ("Mode", "slow"): "ModeIsSlow"},
    )
    conditions = {
        "ActionIsIgnore": {"Fn::Equals": [{"Ref": "Action"}, "ignore"]},
        "ModeIsSlow": {"Fn::Equals": [{"Ref": "Mode"}, "slow"]},
        **folded.conditions,
    }
    template = {
        "Parameters": {"Action": {"Default": "drain"}, "Mode": {"Default": "fast"}},
        "Conditions": conditions,
        **folded.template,
    }
    assert folded.template["Resources"]["Rule"]["Condition"] == "ActionNotIgnore"
    for values, expected in [({}, base), ({"Action": "ignore"}, without_rule), ({"Mode": "slow"}, other_timeout)]:
        assert resolve(template, values)["Resources"] == expected["Resources"], values
    both = resolve(template, {"Action": "ignore", "Mode": "slow"})["Resources"]
    assert "Rule" not in both and both["Fn"]["Properties"]["Timeout"] == 900


def test_two_parameters_changing_one_value_are_refused() -> None:
    base = synth("prod", 600)
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    a["Resources"]["Fn"]["Properties"]["Timeout"] = 300
    b["Resources"]["Fn"]["Properties"]["Timeout"] = 900
    with pytest.raises(FoldError, match="changed by both A and B"):
        fold(base, [Variant("A", "x", a), Variant("B", "y", b)], {("A", "x"): "AIsX", ("B", "y"): "BIsY"})


# --- a value two parameters change: the ownership tag's key and value -------------------------------------------

TAG_SENTINELS: dict[str, str | int] = {"ClusterName": "zzclusterzz", "Key": "zzkeyzz:zz/zz", "Value": "zzvaluezz"}
TAG_CONDITIONS = {("Key", ""): "KeyIsEmpty", ("Value", ""): "ValueIsEmpty"}


def tag_synth(cluster: str, key: str, value: str) -> dict[str, Any]:
    """What the construct writes for OWNERSHIP_TAG key or key=value (an empty key: none): the variable, and a
    statement whose condition key is the tag's key and whose value is the tag's value or the cluster's name."""
    arn = {"Fn::GetAtt": ["Fn", "Arn"]}  # any intrinsic: the policy's text then a substitution with variables
    action = "autoscaling:CompleteLifecycleAction"
    by_cluster_tag = {"StringEquals": {"aws:ResourceTag/eks:cluster-name": [cluster]}}
    statements: list[dict[str, Any]] = [
        {"Sid": "Cluster", "Action": action, "Resource": arn, "Condition": by_cluster_tag}
    ]
    variables = {"CLUSTER_NAMES": cluster}
    if key:
        variables["OWNERSHIP_TAG"] = f"{key}={value}" if value else key
        statements.append({"Sid": "Tag", "Action": action, "Resource": arn,
                           "Condition": {"StringEquals": {f"aws:ResourceTag/{key}": [value or cluster]}}})  # fmt: skip
    return {
        "Resources": {
            "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": variables}}},
            "Policy": {"Type": "AWS::IAM::Policy", "Properties": {"PolicyDocument": {"Statement": statements}}},
        }
    }


def tag_variants(*, together: bool) -> list[Variant]:
    s = {name: str(v) for name, v in TAG_SENTINELS.items()}
    variants = [
        Variant("Key", "", substitute(tag_synth(s["ClusterName"], "", s["Value"]), TAG_SENTINELS)),
        Variant("Value", "", substitute(tag_synth(s["ClusterName"], s["Key"], ""), TAG_SENTINELS)),
    ]
    if together:
        both = substitute(tag_synth(s["ClusterName"], "", ""), TAG_SENTINELS)
        variants.append(Variant("Key", "", both, together={"Value": ""}))
    return variants


def test_two_parameters_changing_one_value_fold_exactly_with_their_synth_together() -> None:
    base = substitute(tag_synth("zzclusterzz", "zzkeyzz:zz/zz", "zzvaluezz"), TAG_SENTINELS)
    folded = fold(base, tag_variants(together=True), TAG_CONDITIONS)
    template = {
        "Parameters": {"ClusterName": {}, "Key": {"Default": ""}, "Value": {"Default": ""}},
        "Conditions": {
            "KeyIsEmpty": {"Fn::Equals": [{"Ref": "Key"}, ""]},
            "ValueIsEmpty": {"Fn::Equals": [{"Ref": "Value"}, ""]},
            **folded.conditions,
        },
        **folded.template,
    }
    for key, value in [("team", "platform"), ("team", ""), ("", "platform"), ("", "")]:
        resolved = resolve(template, {"ClusterName": "prod", "Key": key, "Value": value})
        assert resolved["Resources"] == tag_synth("prod", key, value)["Resources"], (key, value)


def test_two_parameters_changing_one_value_without_their_synth_together_are_refused() -> None:
    base = substitute(tag_synth("zzclusterzz", "zzkeyzz:zz/zz", "zzvaluezz"), TAG_SENTINELS)
    with pytest.raises(FoldError, match="changed by both Key and Value, never synthesized together"):
        fold(base, tag_variants(together=False), TAG_CONDITIONS)


def test_a_value_cut_from_a_sentinel_is_refused() -> None:
    """The construct partitions OWNERSHIP_TAG at "=": from one sentinel holding "=", the parts it makes are left in
    the template (what a single OwnershipTag parameter would have shipped), not a reference."""
    one: dict[str, str | int] = {"ClusterName": "zzclusterzz", "OwnershipTag": "zzkeyzz=zzvaluezz"}
    key, _, value = str(one["OwnershipTag"]).partition("=")
    check_whole(substitute(tag_synth("zzclusterzz", "zzkeyzz:zz/zz", "zzvaluezz"), TAG_SENTINELS), TAG_SENTINELS)
    cut = substitute(tag_synth("zzclusterzz", key, value), one)
    with pytest.raises(FoldError, match=r"Resources\.Policy\.Properties\.PolicyDocument.*'zzkeyzz' of OwnershipTag"):
        check_whole(cut, one)
    check_whole(substitute(synth("zzclusterzz", 777, derived=True), SENTINELS), SENTINELS)  # not cut: check_same's
