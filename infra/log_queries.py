"""CloudWatch Logs Insights queries over the function's log group, shared by the dashboard (LogQueryWidget) and
docs/runbook.md, which quotes each one verbatim (tests/infra/test_runbook.py keeps them equal).

They read the Powertools JSON lines: `correlation_id` is the EventBridge event id, and `kind`, `cluster`,
`instance_id`, `node` are appended by the workflow; failed steps log "<step> step failed" with `error_type` and
`error`; a drain that missed its deadline logs "drain did not finish" with a summary of its report.
"""

from __future__ import annotations

from dataclasses import dataclass

_WHO = "correlation_id as event_id, kind, cluster, instance_id, node"


@dataclass(frozen=True)
class LogQuery:
    title: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """The query as typed in the console (LogQueryWidget joins its lines the same way)."""
        return "\n| ".join(self.lines)


FAILED_STEPS = LogQuery(
    "Errors: failed steps, bad settings, malformed events",
    (
        f"fields @timestamp, {_WHO}, message, error_type, error, variable, field",
        'filter level = "ERROR"',
        "sort @timestamp desc",
        "limit 100",
    ),
)
FUNCTION_FAILURES = LogQuery(
    "Function failures (runtime errors, timeouts)",
    (
        "fields @timestamp, @requestId, errorType, errorMessage, message",
        'filter ispresent(errorType) or level = "ERROR" or @message like /Task timed out/',
        "sort @timestamp desc",
        "limit 100",
    ),
)
DEADLINES_MISSED = LogQuery(
    "Drains that missed their deadline",
    (
        f"fields @timestamp, {_WHO}, report.remaining, report.blocked, report.evicted, report.passes",
        'filter message = "drain did not finish"',
        "sort @timestamp desc",
        "limit 100",
    ),
)
LIFECYCLE_ACTIONS = LogQuery(
    "Lifecycle actions completed",
    (
        f"fields @timestamp, {_WHO}, asg, hook, result, outcome, why",
        'filter message = "lifecycle action"',
        "sort @timestamp desc",
        "limit 100",
    ),
)
ONE_EVENT = LogQuery(
    "Everything one event did (replace the id)",
    (
        f"fields @timestamp, {_WHO}, level, message, error",
        'filter correlation_id = "EVENT-ID"',
        "sort @timestamp asc",
        "limit 1000",
    ),
)

DASHBOARD_QUERIES = (FAILED_STEPS, DEADLINES_MISSED, LIFECYCLE_ACTIONS)
ALL_QUERIES = (FAILED_STEPS, FUNCTION_FAILURES, DEADLINES_MISSED, LIFECYCLE_ACTIONS, ONE_EVENT)
