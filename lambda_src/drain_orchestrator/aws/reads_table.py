"""The shared-reads table (DynamoDB): where executions that EC2 throttled leave the instances they need read, and
where one of them, holding the table's lease, publishes what one DescribeInstances said about all of them
(shared_reads.py has the protocol; this module only speaks DynamoDB).

Items (partition key ``pk``, sort key ``sk``, all with an ``expires`` epoch the table's TTL deletes them after):
- a want: ``pk = want#<shard>``, ``sk = <milliseconds, 15 digits>#<instance id>``: sorted by when it was left, so
  the lease holder queries only the wants newer than the last it served;
- facts: ``pk = facts#<instance id>``, ``sk = -``: ``read_ms`` (when the read was sent) and ``facts`` (JSON, or
  absent when EC2 did not know the instance);
- the lease: ``pk = sk = lease``: ``holder``, ``until_ms`` and ``served_ms`` (the wants up to then are answered).
"""

from __future__ import annotations

TABLE_VARIABLE = "SHARED_READS_TABLE"
PARTITION_KEY = "pk"
SORT_KEY = "sk"
EXPIRY_ATTRIBUTE = "expires"
# What the function's role needs on the table, and nothing else (the stack grants exactly these).
ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:Query",
    "dynamodb:BatchWriteItem",
)
