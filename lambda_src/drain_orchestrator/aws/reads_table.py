"""The shared-reads table (DynamoDB): where executions that EC2 throttled leave the instances they need read, and
where one of them, holding the table's lease, publishes what one DescribeInstances said about all of them
(shared_reads.py has the protocol; this module only speaks DynamoDB).

Items (partition key ``pk``, sort key ``sk``, all with an ``expires`` epoch after which the table's TTL deletes them):
- a want: ``pk = want#<shard>``, ``sk = <milliseconds, 15 digits>#<instance id>``: sorted by when it was left, so
  the lease holder queries only the wants newer than the last it answered; a few shards spread a storm's writes;
- facts: ``pk = facts#<instance id>``, ``sk = -``: ``read_ms`` (when the read was sent) and ``facts`` (JSON, or
  absent when EC2 did not know the instance);
- the lease: ``pk = sk = lease``: ``holder``, ``until_ms`` and ``served_ms`` (the wants up to then are answered).
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from drain_orchestrator.aws.errors import from_client_error, translated
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.failures import FailureKind
from drain_orchestrator.settings import SHARED_READS_TABLE
from drain_orchestrator.shared_reads import Published

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TABLE_VARIABLE = SHARED_READS_TABLE  # the function's environment variable naming the table
PARTITION_KEY = "pk"
SORT_KEY = "sk"
EXPIRY_ATTRIBUTE = "expires"
# What the function's role needs on the table, and nothing else (the stack grants exactly these).
ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
WANT_SHARDS = 4
KEEP_SECONDS = 900  # items outlive any wait on them; TTL deletes them some time after
_LEASE = {PARTITION_KEY: {"S": "lease"}, SORT_KEY: {"S": "lease"}}
_WRITE_BATCH, _READ_BATCH = 25, 100  # BatchWriteItem's and BatchGetItem's limits
_UNPROCESSED_TRIES = 5


@dataclass(frozen=True)
class DynamoReadsTable:
    client: DynamoDBClient
    name: str

    @translated("dynamodb")
    def leave_wants(self, ids: Sequence[str], wanted_ms: int) -> None:
        expires = _expiry()
        self._write(
            {
                PARTITION_KEY: {"S": _want_shard(i)},
                SORT_KEY: {"S": f"{wanted_ms:015d}#{i}"},
                EXPIRY_ATTRIBUTE: {"N": str(expires)},
            }
            for i in ids
        )

    @translated("dynamodb")
    def published(self, ids: Sequence[str]) -> dict[str, Published]:
        found: dict[str, Published] = {}
        wanted = list(dict.fromkeys(ids))
        for start in range(0, len(wanted), _READ_BATCH):
            keys: list[Any] = [
                {PARTITION_KEY: {"S": f"facts#{i}"}, SORT_KEY: {"S": "-"}} for i in wanted[start : start + _READ_BATCH]
            ]
            for _ in range(_UNPROCESSED_TRIES):
                try:
                    resp = self.client.batch_get_item(RequestItems={self.name: {"Keys": keys, "ConsistentRead": True}})
                except ClientError as exc:
                    if _throttled(exc):  # the waiter looks again at its next poll
                        return found
                    raise
                for item in resp.get("Responses", {}).get(self.name, []):
                    iid = item[PARTITION_KEY]["S"].removeprefix("facts#")
                    raw = item.get("facts", {}).get("S")
                    facts = None if raw is None else InstanceFacts.from_dict(json.loads(raw))
                    found[iid] = Published(int(item["read_ms"]["N"]), facts)
                unprocessed: Any = resp.get("UnprocessedKeys", {}).get(self.name)
                keys = list(unprocessed["Keys"]) if unprocessed else []
                if not keys:
                    break
        return found

    @translated("dynamodb")
    def take_lease(self, holder: str, now_ms: int, until_ms: int) -> int | None:
        try:
            resp = self.client.update_item(
                TableName=self.name,
                Key=_LEASE,
                UpdateExpression="SET holder = :h, until_ms = :u, #e = :e",
                ConditionExpression="attribute_not_exists(until_ms) OR until_ms < :now",
                ExpressionAttributeNames={"#e": EXPIRY_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":h": {"S": holder},
                    ":u": {"N": str(until_ms)},
                    ":now": {"N": str(now_ms)},
                    ":e": {"N": str(_expiry())},
                },
                ReturnValues="ALL_OLD",
            )
        except ClientError as exc:
            if _condition_failed(exc) or _throttled(exc):  # held, or too many waiters trying: not ours this time
                return None
            raise
        return int(resp.get("Attributes", {}).get("served_ms", {}).get("N", "0"))

    @translated("dynamodb")
    def wants_since(self, since_ms: int) -> list[tuple[int, str]]:
        wants: list[tuple[int, str]] = []
        for shard in range(WANT_SHARDS):
            paginator = self.client.get_paginator("query")
            pages = paginator.paginate(
                TableName=self.name,
                KeyConditionExpression="pk = :p AND sk > :s",
                ExpressionAttributeValues={":p": {"S": f"want#{shard}"}, ":s": {"S": f"{max(since_ms, 0):015d}"}},
                ConsistentRead=True,
            )
            for page in pages:
                for item in page.get("Items", []):
                    at, _, iid = item[SORT_KEY]["S"].partition("#")
                    wants.append((int(at), iid))
        return sorted(wants)

    @translated("dynamodb")
    def publish(self, found: Mapping[str, InstanceFacts | None], read_ms: int) -> None:
        expires = _expiry()
        self._write(
            {
                PARTITION_KEY: {"S": f"facts#{iid}"},
                SORT_KEY: {"S": "-"},
                "read_ms": {"N": str(read_ms)},
                EXPIRY_ATTRIBUTE: {"N": str(expires)},
                **({} if facts is None else {"facts": {"S": json.dumps(facts.to_dict(), separators=(",", ":"))}}),
            }
            for iid, facts in found.items()
        )

    @translated("dynamodb")
    def release_lease(self, holder: str, served_ms: int | None) -> None:
        update, values = "SET until_ms = :zero", {":zero": {"N": "0"}, ":h": {"S": holder}}
        if served_ms is not None:
            update += ", served_ms = :s"
            values[":s"] = {"N": str(served_ms)}
        try:
            self.client.update_item(
                TableName=self.name,
                Key=_LEASE,
                UpdateExpression=update,
                ConditionExpression="holder = :h",
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise  # lapsed and taken by another: theirs now

    def _write(self, items: Any) -> None:
        puts: list[Any] = [{"PutRequest": {"Item": item}} for item in items]
        for start in range(0, len(puts), _WRITE_BATCH):
            batch = puts[start : start + _WRITE_BATCH]
            for _ in range(_UNPROCESSED_TRIES):
                resp = self.client.batch_write_item(RequestItems={self.name: batch})
                batch = resp.get("UnprocessedItems", {}).get(self.name, [])
                if not batch:
                    break


def _want_shard(instance_id: str) -> str:
    return f"want#{zlib.crc32(instance_id.encode()) % WANT_SHARDS}"


def _expiry() -> int:
    return int(time.time()) + KEEP_SECONDS


def _throttled(exc: ClientError) -> bool:
    return from_client_error(exc, "dynamodb").kind is FailureKind.THROTTLED


def _condition_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
