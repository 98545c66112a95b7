"""Template assertions for the dashboard (every metric the function emits, the dead letters, the log queries) and
the alarms: where they go, their thresholds, the failures that would otherwise stay silent, and the deadline alarms
per cluster."""

from __future__ import annotations

import json
from typing import Any, get_args

from infra.log_queries import DASHBOARD_QUERIES
from infra.observability import METRIC_WIDGETS

from drain_orchestrator.interruption import Kind
from tests.infra.conftest import Synthesized
from tests.infra.stack_support import logical_id


def dashboard(synth: Synthesized) -> dict[str, Any]:
    """The dashboard body as JSON; CloudFormation tokens (always inside JSON strings) become TOKEN."""
    body = synth.only("AWS::CloudWatch::Dashboard")["DashboardBody"]
    parsed: dict[str, Any] = json.loads(
        "".join(part if isinstance(part, str) else "TOKEN" for part in body["Fn::Join"][1])
    )
    return parsed


def test_dashboard_shows_every_metric(single: Synthesized) -> None:
    widgets = dashboard(single)["widgets"]
    titles = [w["properties"]["title"] for w in widgets]
    assert titles == [
        "Alarms",
        *(title for title, _ in METRIC_WIDGETS),
        "Function (live alias)",
        "Dead letters",
        *(query.title for query in DASHBOARD_QUERIES),
    ]
    expressions = {
        line[0]["expression"]
        for w in widgets
        for line in w["properties"].get("metrics", [])
        if isinstance(line[0], dict)
    }
    names = {
        "EventsReceived", "EventsIgnored", "NodesCordoned", "NodesDrained", "LifecycleActionsCompleted",
        "PodsEvicted", "DrainDurationSeconds", "EvictionsBlockedByPDB", "PodsForceDeleted",
        "DrainDeadlineMissed", "Errors", "DrainHeldSeconds", "LifecycleAccessDenied",
    }  # fmt: skip

    def expected(name: str, stat: str) -> str:
        return "SEARCH('Namespace=" + '"DrainOrchestrator" MetricName="' + name + '"' + f"', '{stat}', 300)"

    for name in names - {"DrainDurationSeconds", "DrainHeldSeconds"}:
        assert expected(name, "Sum") in expressions, name
    assert expected("DrainDurationSeconds", "p50") in expressions
    assert expected("DrainDurationSeconds", "Maximum") in expressions
    assert expected("DrainHeldSeconds", "Maximum") in expressions
    dead_letters = next(w for w in widgets if w["properties"]["title"] == "Dead letters")["properties"]["metrics"]
    assert [m[:2] for m in dead_letters] == [["AWS/SQS", "ApproximateNumberOfMessagesVisible"]] * 2
    assert len(widgets[0]["properties"]["alarms"]) == 11


def alarms(synth: Synthesized) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in synth.resources("AWS::CloudWatch::Alarm").items()}


LOUD = ("StepsFailing", "Throttles", "AsyncEventAge", "EventBridgeFailedInvocations", "Liveness")


def test_alarms_go_to_the_alarm_topic(single: Synthesized) -> None:
    found = alarms(single)
    topic = {"Ref": logical_id(single, "AWS::SNS::Topic", "AlarmTopic")}
    # errors, two dead-letter queues, deadline missed, lifecycle access denied, drain held (one cluster), failure alarms
    assert len(found) == 6 + len(LOUD)
    for logical, alarm in found.items():
        assert alarm["AlarmActions"] == [topic]
        if any(name in logical for name in LOUD):
            continue  # their own thresholds: test_failures_that_would_stay_silent_each_have_an_alarm
        assert alarm["Threshold"] == 1
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["TreatMissingData"] == "notBreaching"
    errors = next(a for a in found.values() if a.get("MetricName") == "Errors")
    assert errors["Namespace"] == "AWS/Lambda"
    function = {"Ref": logical_id(single, "AWS::Lambda::Function", "DrainOrchestratorFunction")}
    assert {"Name": "Resource", "Value": {"Fn::Join": ["", [function, ":live"]]}} in errors["Dimensions"]
    queues = sorted(
        a["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
        for a in found.values()
        if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"
    )
    assert queues == sorted(single.resources("AWS::SQS::Queue"))
    (deadline,) = [a for a in found.values() if "Metrics" in a and over(a) == "DrainDeadlineMissed"]
    assert_deadline_alarm(deadline, "prod")
    (held,) = [a for a in found.values() if "Metrics" in a and over(a) == "DrainHeldSeconds"]
    assert_deadline_alarm(held, "prod", metric="DrainHeldSeconds", statistic="Maximum")
    (denied,) = [a for a in found.values() if "Metrics" in a and over(a) == "LifecycleAccessDenied"]
    assert_deadline_alarm(denied, "prod", metric="LifecycleAccessDenied")


def test_failures_that_would_stay_silent_each_have_an_alarm(single: Synthesized) -> None:
    found = {name: next(a for k, a in alarms(single).items() if name in k) for name in LOUD}
    function = {"Ref": logical_id(single, "AWS::Lambda::Function", "DrainOrchestratorFunction")}
    own = [{"Name": "service", "Value": "drain-orchestrator"}]

    steps = found["StepsFailing"]  # 15 minutes of failing steps, whatever the step
    assert (steps["Namespace"], steps["MetricName"], steps["Dimensions"]) == ("DrainOrchestrator", "StepFailures", own)
    assert (steps["Period"], steps["EvaluationPeriods"], steps["DatapointsToAlarm"]) == (300, 3, 3)
    assert "rbac apply" in steps["AlarmDescription"]  # the most likely cause, named
    throttles, age = found["Throttles"], found["AsyncEventAge"]
    assert (throttles["Namespace"], throttles["MetricName"]) == ("AWS/Lambda", "Throttles")
    assert (age["MetricName"], age["Statistic"], age["Threshold"]) == ("AsyncEventAge", "Maximum", 120_000)
    for alarm in (throttles, age):
        assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": function}]  # every version's
    failed = found["EventBridgeFailedInvocations"]
    series = [m["MetricStat"]["Metric"] for m in failed["Metrics"] if "MetricStat" in m]
    assert {m["MetricName"] for m in series} == {"FailedInvocations"}
    rules = {d["Value"]["Ref"] for m in series for d in m["Dimensions"]}
    assert rules == set(single.resources("AWS::Events::Rule"))  # every rule, the schedules too
    live = found["Liveness"]  # silence is the failure
    assert (live["MetricName"], live["Dimensions"], live["Period"]) == ("LivenessChecks", own, 3600)
    assert (live["ComparisonOperator"], live["Threshold"], live["TreatMissingData"]) == (
        "LessThanThreshold",
        1,
        "breaching",
    )


def over(alarm: dict[str, Any]) -> str:
    """The metric an alarm's math expression is over."""
    name: str = next(m for m in alarm["Metrics"] if "MetricStat" in m)["MetricStat"]["Metric"]["MetricName"]
    return name


KINDS = list(get_args(Kind))  # every kind the function names, so a new one cannot miss the alarm


def assert_deadline_alarm(
    alarm: dict[str, Any], cluster: str, *, metric: str = "DrainDeadlineMissed", statistic: str = "Sum"
) -> None:
    """Sums ``metric`` (DrainDeadlineMissed by default) over every kind, with the dimensions the workflow emits."""
    series = [m for m in alarm["Metrics"] if "MetricStat" in m]
    (expression,) = [m for m in alarm["Metrics"] if "Expression" in m]
    assert expression["ReturnData"] is not False
    assert sorted(f"FILL({m['Id']}, 0)" for m in series) == sorted(expression["Expression"].split(" + "))
    kinds = []
    for item in series:
        stat = item["MetricStat"]
        assert stat["Metric"]["Namespace"] == "DrainOrchestrator"
        assert stat["Metric"]["MetricName"] == metric
        dims = {d["Name"]: d["Value"] for d in stat["Metric"]["Dimensions"]}
        assert (dims["cluster"], dims["service"]) == (cluster, "drain-orchestrator")
        kinds.append(dims["kind"])
        assert stat["Stat"] == statistic and stat["Period"] == 300
        assert item["ReturnData"] is False
    assert sorted(kinds) == sorted(KINDS)


def test_deadline_alarm_per_cluster(multi: Synthesized) -> None:
    deadline_alarms = [a for a in alarms(multi).values() if "Metrics" in a and over(a) == "DrainDeadlineMissed"]
    clusters = []
    for alarm in deadline_alarms:
        first = next(m for m in alarm["Metrics"] if "MetricStat" in m)
        dimensions = first["MetricStat"]["Metric"]["Dimensions"]
        cluster = next(d["Value"] for d in dimensions if d["Name"] == "cluster")
        assert_deadline_alarm(alarm, cluster)
        clusters.append(cluster)
    assert sorted(clusters) == ["batch", "prod", "staging"]
