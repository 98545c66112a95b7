"""The shared-reads table's schema, the function's variable naming it and the calls the function makes on it: the
function's own (drain_orchestrator/aws/reads_table.py), mirrored because the construct's wheel does not import the
function's package; tests/infra/test_shared_reads.py checks the two agree. Pure: config validation reads it."""

from __future__ import annotations

TABLE_VARIABLE = "SHARED_READS_TABLE"
PARTITION_KEY = "pk"
SORT_KEY = "sk"
EXPIRY_ATTRIBUTE = "expires"
ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
