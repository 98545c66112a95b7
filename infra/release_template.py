"""The plain CloudFormation template `make release` ships (`drain-orchestrator-X.Y.Z.template.json`): the stack the
CDK app deploys (infra.stack.DrainOrchestratorStack, so every permission, alarm and setting of the construct is in
it), with CloudFormation parameters, for teams that deploy with `aws cloudformation deploy`, Terraform or their own
CDK app in another language.

- Self-contained: `BootstraplessSynthesizer` (no bootstrap version parameter or rule, no staging bucket), and the code
  asset is not an asset at all: `Code.from_bucket` on the `CodeBucket` / `CodeKey` parameters (the release's Lambda
  zip, uploaded once with `aws s3 cp`).
- One served cluster per stack (`ClusterName`): the construct names the cluster in IAM condition keys, access
  entries, alarms and the RBAC resource, which a list parameter cannot reach; several clusters are several stacks.
- Each parameter enters through template_sentinels.py and template_fold.py: the stack is synthesized with sentinel
  values (substituted by references; no part of one may be left: nothing cut from a value), once more with other
  sentinels (which must substitute to the same template: nothing derived from a value), once per other value of
  each choice (folded into conditions) and once per combination of values two parameters change together. cdk-nag
  runs on every one of those synths, as it does on `cdk synth`. tests/infra/test_template_equals_stack.py checks
  the result: the template resolved for several assignments equals the CDK app's synth with the same settings.

    python -m infra.release_template VERSION OUT.json   # (make release runs it: build/release.py)
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import KindActions, OrchestratorConfig
from .template_fold import Variant, fold
from .template_sentinels import check_same, check_whole, substitute
from .validation import LOG_LEVELS, LOG_RETENTION_DAYS

CODE_BUCKET = "CodeBucket"
CODE_KEY = "CodeKey"
CODE_KEY_MAX_LENGTH = 64
ACTIONS = {  # parameter -> KindActions field
    "ActionSpotInterruption": "spot_interruption",
    "ActionCapacityReservationInterruption": "capacity_reservation_interruption",
    "ActionRebalance": "rebalance",
    "ActionStateChange": "state_change",
    "ActionScheduledChange": "scheduled_change",
    "ActionCapacityBlock": "capacity_block",
}
OWNERSHIP_TAG_KEY = "OwnershipTagKey"
OWNERSHIP_TAG_VALUE = "OwnershipTagValue"
# What a string sentinel must hold wherever its parameter's pattern admits it: the characters the construct splits
# values on (key=value, lists, tag-key and ARN parts), so that a value it cuts from the sentinel leaves a part of it
# behind, which template_sentinels.check_whole refuses.
SPLIT_CHARACTERS = "=,/:"
# Values of several parameters synthesized together: the ownership tag's key and value both change the one IAM
# policy document (an empty key removes the statement, an empty value lists the cluster), which only a synth of both
# empty (the defaults) can say. Each is a dict of parameter -> value.
COMBINATIONS: tuple[dict[str, str], ...] = ({OWNERSHIP_TAG_KEY: "", OWNERSHIP_TAG_VALUE: ""},)


@dataclass(frozen=True)
class Param:
    name: str
    description: str
    default: str | int | None  # None: required
    type: str = "String"
    allowed: tuple[str | int, ...] = ()
    pattern: str | None = None
    max_length: int | None = None  # what the version's description has room for (VERSION_TEXT)
    sentinel: str | int | None = None  # synthesized with this, substituted by a reference
    alternate: str | int | None = None  # a second sentinel: the synth with it must substitute to the same template
    variants: tuple[str, ...] = ()  # synthesized once more with each, folded into conditions ("" : not given)

    def cfn(self) -> dict[str, Any]:
        out: dict[str, Any] = {"Type": self.type, "Description": self.description}
        if self.default is not None:
            out["Default"] = self.default
        if self.allowed:
            out["AllowedValues"] = list(self.allowed)
        if self.pattern:
            out["AllowedPattern"] = self.pattern
        if self.max_length:
            out["MaxLength"] = self.max_length
        return out


def _actions() -> tuple[Param, ...]:
    """drain or cordon per event kind. Not `ignore` (no rule for the kind): the construct's alarm on the rules'
    FailedInvocations sums its rules in one math expression whose terms are numbered, so the rules present change one
    value together, which folding one parameter at a time cannot express (FoldError); `ignore` is the construct's."""
    defaults = KindActions()
    out = []
    for name, field_name in ACTIONS.items():
        default = getattr(defaults, field_name)
        allowed = (default, *(v for v in ("drain", "cordon") if v != default))
        out.append(
            Param(
                name,
                f"drain or cordon (ignore, no rule for the kind: with the construct only); default {default}",
                default,
                allowed=allowed,
                variants=allowed[1:],
            )
        )
    return tuple(out)


def _ownership_tag() -> tuple[Param, ...]:
    """OWNERSHIP_TAG, key or key=value, as two parameters: the construct's IAM condition key is the tag's key and its
    value the tag's value or the cluster's name, which CloudFormation cannot cut out of one parameter. Both empty by
    default (no rule): each folded from a synth with it empty, and the two together (COMBINATIONS). No quote or
    backslash: the values go into the IAM policy's JSON text as they are."""
    key_description = "Extra ownership rule: a tag key on instances or Auto Scaling groups (OWNERSHIP_TAG); empty: none"
    value_description = (
        "The value that tag must have (OWNERSHIP_TAG key=value); empty: the tag's value names the cluster"
    )
    return tuple(
        Param(
            name,
            description,
            "",
            pattern=r'^[^=,"\\]*$',
            max_length=length,
            sentinel=sentinel,
            alternate=sentinel.replace("zz", "qq"),
            variants=("",),
        )
        for name, description, length, sentinel in (
            (OWNERSHIP_TAG_KEY, key_description, 40, "zzownerzz:zz/zzkeyzz"),
            (OWNERSHIP_TAG_VALUE, value_description, 23, "zzvaluezz:zz/zz"),
        )
    )


PARAMETERS: tuple[Param, ...] = (
    Param(
        "ClusterName",
        "The EKS cluster this stack serves (one per stack: deploy the template again for another cluster)",
        None,
        pattern=r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,63}$",
        max_length=64,
        sentinel="zzclusterzz",
        alternate="qqclusterqq",
    ),
    Param(
        "LifecycleHookName",
        "The terminate (and launch) lifecycle hook the function answers on the cluster's Auto Scaling groups",
        "drain-orchestrator",
        pattern=r"^[A-Za-z0-9\-_/]{1,40}$",
        max_length=40,
        sentinel="zzhookzz/zznamezz",
        alternate="qqhookqq/qqnameqq",
    ),
    *_ownership_tag(),
    Param(
        "AlarmEmail",
        "E-mail address subscribed to the alarm topic (confirm the subscription mail); empty: none",
        "",
        pattern=r"^([^@\s,]+@[^@\s,]+\.[^@\s,]+)?$",
        sentinel="zz=zzalarm/zz:zz@zzexample.zz",
        alternate="qq=qqalarm/qq:qq@qqexample.qq",
        variants=("",),
    ),
    *_actions(),
    Param(
        "DryRun",
        "true: log what a drain would do, change nothing (DRY_RUN)",
        "false",
        allowed=("false", "true"),
        variants=("true",),
    ),
    Param(
        "CreateAccessEntries",
        "true: EKS access entries for the function (clusters in API or API_AND_CONFIG_MAP mode); false: aws-auth",
        "true",
        allowed=("true", "false"),
        variants=("false",),
    ),
    Param(
        "ApplyRbac",
        "true: the stack applies, upgrades and removes the Kubernetes RBAC and flow schema (needs the access entries)",
        "true",
        allowed=("true", "false"),
        variants=("false",),
    ),
    Param(
        "LogLevel",
        "Function log level",
        "INFO",
        allowed=LOG_LEVELS,
        variants=tuple(v for v in LOG_LEVELS if v != "INFO"),
    ),
    Param("MemorySize", "Function memory in MB", 512, type="Number", sentinel=1777, alternate=1888),
    Param("TimeoutSeconds", "Timeout of one invocation (180-900 s)", 600, type="Number", sentinel=777, alternate=888),
    Param(
        "LogRetentionDays",
        "Retention of the log group",
        30,
        type="Number",
        allowed=LOG_RETENTION_DAYS,
        sentinel=2557,
        alternate=3653,
    ),
)
BY_NAME = {p.name: p for p in PARAMETERS}
# what CloudFormation checks beyond AllowedValues (the construct's own ranges)
RANGES = {"MemorySize": (128, 10240), "TimeoutSeconds": (180, 900)}


def config_for(values: Mapping[str, str | int]) -> OrchestratorConfig:
    """The construct's configuration for one assignment of the parameters."""
    return OrchestratorConfig(
        clusters=(str(values["ClusterName"]),),
        created_hook_name=str(values["LifecycleHookName"]),
        ownership_tag=ownership_tag(values),
        alarm_email=str(values["AlarmEmail"]) or None,
        actions=KindActions(**{field: str(values[name]) for name, field in ACTIONS.items()}),
        drain_settings={"DRY_RUN": "true"} if values["DryRun"] == "true" else {},
        create_access_entries=values["CreateAccessEntries"] == "true",
        apply_rbac=None if values["ApplyRbac"] == "true" else False,  # true: with the access entries
        log_level=str(values["LogLevel"]),
        memory_size=int(values["MemorySize"]),
        timeout_seconds=int(values["TimeoutSeconds"]),
        log_retention_days=int(values["LogRetentionDays"]),
    )


def ownership_tag(values: Mapping[str, str | int]) -> str | None:
    """OWNERSHIP_TAG from its two parameters: key, key=value, or none for an empty key (a value without a key: the
    template's rule refuses it, see RULES)."""
    key, value = str(values[OWNERSHIP_TAG_KEY]), str(values[OWNERSHIP_TAG_VALUE])
    if not key:
        return None
    return f"{key}={value}" if value else key


RULES = {
    "OwnershipTagValueNeedsKey": {
        "RuleCondition": {"Fn::Equals": [{"Ref": OWNERSHIP_TAG_KEY}, ""]},
        "Assertions": [
            {
                "Assert": {"Fn::Equals": [{"Ref": OWNERSHIP_TAG_VALUE}, ""]},
                "AssertDescription": "OwnershipTagValue needs an OwnershipTagKey (the tag that must have that value)",
            }
        ],
    }
}


def check_sentinels(parameters: tuple[Param, ...] = PARAMETERS) -> None:
    """Each string sentinel (and alternate) is a value of its parameter and holds the split characters its pattern
    admits; its runs of letters and digits begin with zz (qq), so they are found nowhere else."""
    for p in parameters:
        for sentinel, mark in ((p.sentinel, "zz"), (p.alternate, "qq")):
            if not isinstance(sentinel, str):
                continue
            pattern = re.compile(p.pattern or ".*")
            if not pattern.fullmatch(sentinel) or (p.max_length and len(sentinel) > p.max_length):
                raise ValueError(f"{p.name}: the sentinel {sentinel!r} is not one of its values")
            lacking = [c for c in SPLIT_CHARACTERS if c not in sentinel and pattern.fullmatch(f"{sentinel}{c}{mark}")]
            if lacking:
                raise ValueError(f"{p.name}: the sentinel {sentinel!r} lacks {lacking}, which its values may hold")
            if any(not run.startswith(mark) for run in re.findall(r"[A-Za-z0-9]+", sentinel)):
                raise ValueError(f"{p.name}: every part of the sentinel {sentinel!r} begins with {mark}")


def synthesize(values: Mapping[str, str | int], outdir: Path) -> dict[str, Any]:
    """One synth of the stack for ``values``, cdk-nag's AwsSolutions checks included (an unacknowledged finding
    fails it)."""
    import aws_cdk as cdk  # noqa: PLC0415 - the folding and the parameter table need no jsii
    import cdk_nag  # noqa: PLC0415
    from aws_cdk import aws_lambda as lambda_  # noqa: PLC0415
    from aws_cdk import aws_s3 as s3  # noqa: PLC0415

    from .stack import DESCRIPTION, STACK_NAME, add_orchestrator  # noqa: PLC0415

    # construct paths in the metadata: how template_fold matches a resource whose logical id a variant changes
    app = cdk.App(outdir=str(outdir), analytics_reporting=False, context={"aws:cdk:enable-path-metadata": True})
    stack = cdk.Stack(app, STACK_NAME, description=DESCRIPTION, synthesizer=cdk.BootstraplessSynthesizer())
    bucket = cdk.CfnParameter(stack, CODE_BUCKET, description="S3 bucket holding the release's Lambda zip")
    key = cdk.CfnParameter(
        stack,
        CODE_KEY,
        description="S3 key of the Lambda zip: drain-orchestrator-lambda-X.Y.Z.zip (new code: a new key)",
        max_length=CODE_KEY_MAX_LENGTH,
    )
    code = lambda_.Code.from_bucket(
        s3.Bucket.from_bucket_name(stack, "CodeBucketRef", bucket.value_as_string), key.value_as_string
    )
    add_orchestrator(stack, config_for(values), code)
    cdk.Validations.of(app).add_plugins(cdk_nag.AwsSolutionsChecks(app))
    assembly = app.synth()
    loaded: dict[str, Any] = json.loads(Path(assembly.get_stack_by_name(STACK_NAME).template_full_path).read_text())
    return loaded


def base_values() -> dict[str, str | int]:
    return {p.name: p.sentinel if p.sentinel is not None else p.default or "" for p in PARAMETERS}


def condition_name(parameter: str, value: str) -> str:
    return f"{parameter}Is{value.capitalize() or 'Empty'}"


def build(version: str, work: Path) -> dict[str, Any]:
    """The release template: the base synth with its sentinels substituted, each choice's variants folded in, the
    parameters and their conditions declared."""
    check_sentinels()
    sentinels = {p.name: p.sentinel for p in PARAMETERS if p.sentinel is not None}
    alternates = {p.name: p.alternate for p in PARAMETERS if p.alternate is not None}
    base = base_values()
    synths = iter(range(1000))

    def synth(values: Mapping[str, str | int], sentinels: Mapping[str, str | int] = sentinels) -> dict[str, Any]:
        substituted = substitute(synthesize(values, work / f"synth-{next(synths)}"), sentinels)
        check_whole(substituted, sentinels)
        return substituted

    substituted = synth(base)
    check_same(substituted, synth({**base, **alternates}, alternates))
    variants = [Variant(p.name, v, synth({**base, p.name: v})) for p in PARAMETERS for v in p.variants]
    for values in COMBINATIONS:
        (first, value), *rest = values.items()
        variants.append(Variant(first, value, synth({**base, **values}), together=dict(rest)))
    equalities = {(p.name, v): condition_name(p.name, v) for p in PARAMETERS for v in p.variants}
    folded = fold(substituted, variants, equalities)
    template = _clean(folded.template)
    _version_follows_parameters(template)
    parameters = {p.name: p.cfn() for p in PARAMETERS}
    for name, (low, high) in RANGES.items():
        parameters[name] |= {"MinValue": low, "MaxValue": high}
    template["Parameters"] = {**parameters, **template.get("Parameters", {})}
    template["Parameters"][CODE_KEY]["Default"] = f"drain-orchestrator-lambda-{version}.zip"  # build/release.py's name
    conditions = {name: {"Fn::Equals": [{"Ref": p}, v]} for (p, v), name in equalities.items()}
    template["Conditions"] = {**conditions, **folded.conditions}
    template["Rules"] = RULES
    template["Description"] = f"EKS Drain Orchestrator {version}: drains EKS nodes before EC2 instances go away"
    template["Metadata"] = {
        "AWS::CloudFormation::Interface": {
            "ParameterGroups": [
                {"Label": {"default": "Cluster and code"}, "Parameters": ["ClusterName", CODE_BUCKET, CODE_KEY]},
                {"Label": {"default": "Settings"}, "Parameters": [p.name for p in PARAMETERS[1:]]},
            ]
        }
    }
    return template


# What the function's configuration depends on: a new value must publish a new version, which the alias then routes
# to. Lambda takes at most 256 characters of a version's description, and CloudFormation has no hash: the values go
# in as they are, free text bounded by MaxLength, each choice as its first letter. CodeBucket stays out: new code
# comes under a new key (the release names its zip by version). The ownership tag goes in as OWNERSHIP_TAG spells it
# (key or key=value: a key holds no "=", so no two tags read the same).
VERSION_TEXT = (CODE_KEY, "ClusterName", "LifecycleHookName", OWNERSHIP_TAG_KEY, OWNERSHIP_TAG_VALUE)
OWNERSHIP_TAG_TEXT = {
    "Fn::If": [
        condition_name(OWNERSHIP_TAG_VALUE, ""),
        {"Ref": OWNERSHIP_TAG_KEY},
        {"Fn::Join": ["=", [{"Ref": OWNERSHIP_TAG_KEY}, {"Ref": OWNERSHIP_TAG_VALUE}]]},
    ]
}
VERSION_CHOICES = (*ACTIONS, "DryRun", "LogLevel")
VERSION_NUMBERS = ("MemorySize", "TimeoutSeconds")
VERSION_DESCRIPTION_LIMIT = 256


def _version_follows_parameters(template: dict[str, Any]) -> None:
    """CDK publishes a new function version when the function's configuration changes by naming the version resource
    after a hash of it; here the configuration changes with the parameters under one logical id. A version's
    description can only change by replacement: writing the parameters' values in it publishes a new version (the
    old one is retained, for the executions that run on it) whenever one of them changes."""
    versions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Version"]
    if len(versions) != 1:
        raise ValueError(f"expected the drain function's one version resource, found {len(versions)}")
    letters = {"Fn::Join": ["", [_first_letter(BY_NAME[name]) for name in VERSION_CHOICES]]}
    texts = [{"Ref": name} for name in VERSION_TEXT if name not in (OWNERSHIP_TAG_KEY, OWNERSHIP_TAG_VALUE)]
    parts = [*texts, OWNERSHIP_TAG_TEXT, letters, *({"Ref": name} for name in VERSION_NUMBERS)]
    versions[0]["Properties"]["Description"] = {"Fn::Join": ["/", parts]}


def _first_letter(parameter: Param) -> Any:
    """The parameter's value as its first letter (unique among its allowed values), through its conditions."""
    if len({str(v)[0] for v in parameter.allowed}) != len(parameter.allowed):
        raise ValueError(f"{parameter.name}: two allowed values start with the same letter")
    letter: Any = str(parameter.default)[0]
    for value in parameter.variants:
        letter = {"Fn::If": [condition_name(parameter.name, value), value[0], letter]}
    return letter


def _clean(template: dict[str, Any]) -> dict[str, Any]:
    """Of CDK's per-resource metadata only the construct path (naming the parameters, not the sentinels), as
    `cdk synth` keeps it; not cdk-nag's records."""
    for body in template.get("Resources", {}).values():
        path = body.pop("Metadata", {}).get("aws:cdk:path")
        if path is not None:
            body["Metadata"] = {"aws:cdk:path": path}
    return template


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m infra.release_template VERSION OUT.json", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="release-template-") as work:
        template = build(argv[0], Path(work))
    Path(argv[1]).write_text(json.dumps(template, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
