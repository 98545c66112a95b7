"""infra/template_fold.py on small templates: sentinels become references, a value derived from a sentinel is refused,
and a folded variant resolves back to itself (tests/infra/template_resolve.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from infra.template_fold import FoldError, Variant, check_same, fold, substitute

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
