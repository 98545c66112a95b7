"""The shared-reads table (infra/shared_reads.py): the schema, variable and actions the function's own module states
(drain_orchestrator/aws/reads_table.py), an on-demand table deleted with the stack, the function told its name and
granted exactly its calls on it alone; `sharedReads` false leaves all of it out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from infra.config import ConfigError, OrchestratorConfig, config_from_mapping

from drain_orchestrator.aws import reads_table
from infra import reads_table as mirrored
from tests.infra.conftest import SINGLE, Synthesized, synthesize
from tests.infra.stack_support import by_sid, logical_id, statements

OFF = {"clusters": "prod", "sharedReads": "false"}


def test_the_construct_mirrors_the_functions_schema_variable_and_actions() -> None:
    names = ("TABLE_VARIABLE", "PARTITION_KEY", "SORT_KEY", "EXPIRY_ATTRIBUTE", "ACTIONS")
    assert {n: getattr(mirrored, n) for n in names} == {n: getattr(reads_table, n) for n in names}


def test_an_on_demand_table_with_the_functions_keys_and_ttl_deleted_with_the_stack(single: Synthesized) -> None:
    (table,) = single.resources("AWS::DynamoDB::Table").values()
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Delete", "Delete")
    assert table["Properties"] == {
        "AttributeDefinitions": [
            {"AttributeName": reads_table.PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": reads_table.SORT_KEY, "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": reads_table.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": reads_table.SORT_KEY, "KeyType": "RANGE"},
        ],
        "TimeToLiveSpecification": {"AttributeName": reads_table.EXPIRY_ATTRIBUTE, "Enabled": True},
        # DynamoDB's AWS-owned key (true would be the AWS-managed aws/dynamodb key), as the construct's queues use
        # SQS's own without a customer key
        "SSESpecification": {"SSEEnabled": False},
    }


def test_the_function_is_told_the_table_and_granted_exactly_its_calls_on_it(single: Synthesized) -> None:
    table = logical_id(single, "AWS::DynamoDB::Table", "SharedReadsTable")
    variables = single.drainer("AWS::Lambda::Function")["Environment"]["Variables"]
    assert variables[reads_table.TABLE_VARIABLE] == {"Ref": table}
    statement = by_sid(single)["SharedReadsTable"]
    assert statement["Action"] == list(reads_table.ACTIONS)
    assert statement["Resource"] == {"Fn::GetAtt": [table, "Arn"]}  # the table alone: no index, no `*`
    on_table = [s for s in statements(single) if any(str(a).startswith("dynamodb:") for a in s["Action"])]
    assert on_table == [statement]
    assert "SharedReadsTableKey" not in by_sid(single)  # no customer key: nothing to grant on one


def test_shared_reads_off_leaves_out_the_table_its_variable_and_its_grant(
    synth: Callable[[Mapping[str, Any]], Synthesized],
) -> None:
    off = synth(OFF)
    assert off.resources("AWS::DynamoDB::Table") == {}
    assert reads_table.TABLE_VARIABLE not in off.drainer("AWS::Lambda::Function")["Environment"]["Variables"]
    assert not [s for s in statements(off) if "dynamodb" in str(s["Action"])]
    # nothing else changes: the same resources as the default but the table
    on = synth(SINGLE)
    assert {r["Type"] for r in on.raw["Resources"].values()} - {r["Type"] for r in off.raw["Resources"].values()} == {
        "AWS::DynamoDB::Table"
    }
    assert len(on.raw["Resources"]) - len(off.raw["Resources"]) == 1


@pytest.mark.parametrize("value", ["no", "1", 0, ""])
def test_a_bad_shared_reads_value_names_the_key_and_what_was_expected(value: object, tmp_path: Path) -> None:
    expected = "'sharedReads': expected true or false, got " + repr(value)
    with pytest.raises(ConfigError) as raised:
        config_from_mapping({"clusters": "prod", "sharedReads": value})
    assert raised.value.key == "sharedReads" and expected in str(raised.value)
    with pytest.raises(ConfigError, match="'sharedReads'"):
        synthesize({"clusters": "prod", "sharedReads": "off"}, tmp_path)


def test_shared_reads_from_context_and_as_a_prop() -> None:
    assert config_from_mapping(SINGLE).shared_reads is True
    assert config_from_mapping({"clusters": "prod", "sharedReads": " False "}).shared_reads is False
    assert config_from_mapping({"clusters": "prod", "sharedReads": True}).shared_reads is True
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(clusters=("prod",), shared_reads="false")  # type: ignore[arg-type]
    assert raised.value.key == "shared_reads" and "expected True or False, got 'false'" in str(raised.value)
