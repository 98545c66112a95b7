"""Where the event's decide step gets its instance facts: EC2 directly, and, once EC2 throttles the read and the
stack has a shared-reads table (SHARED_READS_TABLE), a read shared with the other throttled executions
(shared_reads.py).

The first read is a single attempt: a throttled answer means the account's bucket is empty, and waiting out botocore's
own backoff alone (up to its retry window) is what delays a storm's last cordons. Any other failure of that attempt
is read again through the usual client, with its retries. A table that fails (missing grant, deleted table) is
logged and counted, and the event reads EC2 on its own as it would without one: the table can delay a read, never
lose it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from drain_orchestrator.aws import ec2 as ec2_api
from drain_orchestrator.aws.reads_table import TABLE_VARIABLE
from drain_orchestrator.decide import BotoFacts
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.shared_reads import ReadsTable, SharedRead

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client


@dataclass(frozen=True)
class SharedWhenThrottled(BotoFacts):
    """BotoFacts whose instance read is shared with other executions once EC2 throttles it."""

    first_try: EC2Client
    table: ReadsTable

    def describe_instances(self, instance_ids: Sequence[str]) -> dict[str, InstanceFacts | None]:
        try:
            return self._read_once(instance_ids)
        except ApiError as exc:
            if exc.kind is not FailureKind.THROTTLED:
                raise
        shared = SharedRead(self.table, self._read_once, time.time, time.sleep)
        started = time.monotonic()
        try:
            found = shared.read(instance_ids)
        except ApiError as exc:
            if exc.service != "dynamodb":
                raise
            metric("Errors", reason="shared-reads-table")
            logger.warning(
                "the shared-reads table failed: this event reads EC2 on its own",
                extra={"variable": TABLE_VARIABLE, "table": self.table.name, "error": str(exc)},
            )
            return super().describe_instances(instance_ids)
        role = "reader" if shared.rounds_read else "answered"
        metric("SharedReads", role=role)
        logger.info(
            "EC2 throttled the instance read: read with other executions",
            extra={"role": role, "waited_seconds": round(time.monotonic() - started, 3)},
        )
        return found

    def _read_once(self, instance_ids: Sequence[str]) -> dict[str, InstanceFacts | None]:
        """One attempt, raising THROTTLED when EC2 refuses it: the event's first read, and a shared round's (a
        refused round gives the lease back at once and the next waiter tries again, EC2 refilling a token every
        50 ms, instead of backing off while it holds the lease). Any other failure is read again with the usual
        retries."""
        try:
            return ec2_api.describe_instances(self.first_try, instance_ids)
        except ApiError as exc:
            if exc.kind is FailureKind.THROTTLED:
                raise
        return super().describe_instances(instance_ids)


def facts_source() -> BotoFacts:
    """The decide step's facts: shared once throttled when the stack has a shared-reads table."""
    from drain_orchestrator.workflow import runtime  # noqa: PLC0415 - the container's clients

    table = runtime.reads_table()
    if table is None:
        return BotoFacts(runtime.ec2(), runtime.autoscaling())
    return SharedWhenThrottled(runtime.ec2(), runtime.autoscaling(), runtime.ec2_first_try(), table)
