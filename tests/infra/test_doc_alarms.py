"""The alarms the docs list are the alarms the construct creates: docs/deploy.md's table names each (a cluster's as
`<cluster>`) and gives their count, and bench/costs.py, from which docs/cost.md prices them, counts the same."""

from __future__ import annotations

import re

from bench import costs

from tests.infra.conftest import MULTI_VPC, REPO_ROOT, Synthesized

DEPLOY = REPO_ROOT / "docs" / "deploy.md"


def _alarms(synthesized: Synthesized) -> list[str]:
    return [alarm.node.id for alarm in synthesized.stack.orchestrator.alarms]


def _generic(name: str) -> str:
    """`DeadlineMissed-prod` as the docs name it: `DeadlineMissed-<cluster>`."""
    clusters = "|".join(re.escape(c) for c in MULTI_VPC["clusters"].split(","))
    return re.sub(rf"-({clusters})$", "-<cluster>", name)


def _documented() -> list[str]:
    text = DEPLOY.read_text(encoding="utf-8")
    table = text.split("| alarm | fires when |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE)


def test_deploy_md_lists_every_alarm_the_construct_creates(multi: Synthesized) -> None:
    created = sorted({_generic(n) for n in _alarms(multi)})
    assert sorted(_documented()) == created
    assert len(multi.resources("AWS::CloudWatch::Alarm")) == len(_alarms(multi))  # the construct's list is all


def test_the_alarm_count_the_docs_give_is_the_construct_s(single: Synthesized, multi: Synthesized) -> None:
    clusters = len(MULTI_VPC["clusters"].split(","))
    per_cluster = (len(_alarms(multi)) - len(_alarms(single))) // (clusters - 1)
    fixed = len(_alarms(single)) - per_cluster
    assert (fixed, per_cluster) == (costs.ALARMS_FIXED, costs.ALARMS_PER_CLUSTER)
    said = re.search(r"(\d+), plus (\d+) per served cluster", " ".join(DEPLOY.read_text(encoding="utf-8").split()))
    assert said, "docs/deploy.md: the alarm count ('N, plus M per served cluster') is gone"
    assert (int(said.group(1)), int(said.group(2))) == (fixed, per_cluster)
