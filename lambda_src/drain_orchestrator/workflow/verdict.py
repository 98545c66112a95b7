"""The verdict step: complete the lifecycle action, take back the node's surges and report, in one durable step.

    complete (lifecycle_steps.complete_action) -> restore surges (surge_step.restore_surges) -> report
    (report_step.report)

The flow (drain_flow._verdict) fixes the result and says which parts are due; the step runs them in turn, each as
its own step ran it, and stops at a part that failed: the flow retries that part under its own name
("complete-lifecycle-retry-N", "surge-restore-retry-N") and runs the parts after it as their own steps
("surge-restore", "report"), as executions of earlier releases ran them all. The lifecycle action is completed before
the report, whatever happens. A crash mid-step repeats it from the top: AWS answers a completed action "already
done" (counted once), the restore is idempotent, and the report's phase claim is this execution's already, so a
repeat may only notify twice, as a crash in the report's own step could.
"""

from __future__ import annotations

import copy

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator.outcome import InstanceOutcome, Result
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.lifecycle_steps import complete_action
from drain_orchestrator.workflow.pace import lifecycle_of
from drain_orchestrator.workflow.report_step import report
from drain_orchestrator.workflow.results import SurgeRestored, Verdict
from drain_orchestrator.workflow.surge_step import restore_surges

Completing = tuple[str, str]  # the lifecycle action's result (CONTINUE | ABANDON) and why
Surged = tuple[list[str], bool]  # the node's surged workloads, and whether to sweep surges left behind


@durable_step
def verdict_step(
    step_ctx: StepContext,
    job: DrainJob,
    summary: InstanceOutcome,
    started_at: float,
    completing: Completing | None,
    surged: Surged | None,
) -> Verdict:
    said = copy.deepcopy(summary)  # the flow's own summary takes the checkpoint's parts (replays never run this)
    completion = restored = None
    if completing is not None:
        completion = complete_action(job.event, job.decision, *completing)
        if completion.fault is not None:
            return Verdict(completion)
        note_lifecycle(said, lifecycle_of(completion))
    if surged is not None:
        restored = restore_surges(job, *surged)
        if restored.fault is not None:
            return Verdict(completion, restored)
        note_surges(said, restored)
    return Verdict(completion, restored, report(job, said, started_at))


def note_lifecycle(summary: InstanceOutcome, lifecycle: dict[str, object]) -> None:
    summary.lifecycle = lifecycle
    if lifecycle.get("outcome") == "denied":  # IAM will not let this function answer the hook
        summary.result = Result.LIFECYCLE_ACCESS_DENIED


def note_surges(summary: InstanceOutcome, out: SurgeRestored) -> None:
    if out.fault is not None:
        summary.surge_restored = [f"failed: {out.fault.message}"]
    elif out.restored:
        summary.surge_restored = out.restored
