"""CloudFormation extensions: ``AWS::Lambda::Alias`` and ``AWS::CloudWatch::Alarm`` as resources, so the release
template (infra/release_template.py), whose rules target the function's alias and whose dashboard lists the alarms,
can be created.

moto 5.2.5's CloudFormation has no model for it: the resource is skipped, its ``Ref`` is empty and the first
``AWS::Events::Rule`` whose target is the alias fails the stack (a target without an ``Arn``). Here it is created
through moto's own Lambda API (``CreateAlias``): its ``Ref`` is the alias ARN, as in CloudFormation. The version it
points at is moto's ``AWS::Lambda::Version``, which answers no ``Fn::GetAtt`` (the alias's ``FunctionVersion`` is
``Fn::GetAtt Version.Version``): install() gives it that attribute.

moto's ``AWS::DynamoDB::Table`` drops ``TimeToLiveSpecification`` (the table is created without TTL, silently):
install() has it applied with moto's own ``UpdateTimeToLive``, so the release's shared-reads table is the stack's.

moto has no CloudFormation model for alarms either (skipped; the dashboard's ``Fn::GetAtt Alarm.Arn`` then fails
the stack): here they are created through ``PutMetricAlarm`` with their metric or metric math, their actions and
description, and answer ``Arn``. Nothing evaluates them.
"""

from __future__ import annotations

from typing import Any

from moto.awslambda.models import lambda_backends
from moto.cloudwatch.models import Dimension, Metric, MetricDataQuery, MetricStat, cloudwatch_backends
from moto.core.common_models import CloudFormationModel


class LambdaAliasResource(CloudFormationModel):
    def __init__(self, arn: str, name: str, function_name: str) -> None:
        self.arn, self.name, self.function_name = arn, name, function_name

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Lambda::Alias"

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in ("AliasArn",)

    def get_cfn_attribute(self, attribute_name: str) -> str:
        if attribute_name == "AliasArn":
            return self.arn
        raise NotImplementedError(f"{self.cloudformation_type()}.{attribute_name}")

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **_: Any
    ) -> LambdaAliasResource:
        props = cloudformation_json["Properties"]
        backend = lambda_backends[account_id][region_name]
        function_name = str(props["FunctionName"])
        alias = backend.create_alias(
            name=str(props["Name"]),
            function_name=function_name,
            function_version=str(props["FunctionVersion"]),
            description=str(props.get("Description", "")),
            routing_config=props.get("RoutingConfig", ""),
        )
        return cls(alias.arn, alias.name, function_name)


class AlarmResource(CloudFormationModel):
    def __init__(self, name: str, arn: str) -> None:
        self.name, self.arn = name, arn

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CloudWatch::Alarm"

    @staticmethod
    def cloudformation_name_type() -> str:
        return "AlarmName"

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Arn"

    def get_cfn_attribute(self, attribute_name: str) -> str:
        if attribute_name == "Arn":
            return self.arn
        raise NotImplementedError(f"{self.cloudformation_type()}.{attribute_name}")

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **_: Any
    ) -> AlarmResource:
        props = cloudformation_json["Properties"]
        alarm = cloudwatch_backends[account_id][region_name].put_metric_alarm(
            name=str(props.get("AlarmName", resource_name)),
            namespace=props.get("Namespace"),
            metric_name=props.get("MetricName"),
            comparison_operator=props["ComparisonOperator"],
            evaluation_periods=int(props["EvaluationPeriods"]),
            period=props.get("Period"),
            threshold=float(props["Threshold"]),
            statistic=props.get("Statistic"),
            description=str(props.get("AlarmDescription", "")),
            dimensions=list(props.get("Dimensions", [])),
            alarm_actions=list(props.get("AlarmActions", [])),
            metric_data_queries=[_query(q) for q in props.get("Metrics", [])] or None,
            treat_missing_data=props.get("TreatMissingData"),
        )
        return cls(alarm.name, alarm.alarm_arn)


def _query(query: dict[str, Any]) -> MetricDataQuery:
    stat = query.get("MetricStat")
    metric_stat = None
    if stat is not None:
        metric = stat["Metric"]
        dimensions = [Dimension(d["Name"], d["Value"]) for d in metric.get("Dimensions", [])]
        metric_stat = MetricStat(
            Metric(metric["MetricName"], metric["Namespace"], dimensions),
            stat["Period"],
            stat["Stat"],
            stat.get("Unit"),
        )
    return MetricDataQuery(
        query["Id"], query.get("Label", ""), query.get("Period"), query.get("ReturnData", True),
        expression=query.get("Expression"), metric_stat=metric_stat,
    )  # fmt: skip


def _table_with_ttl() -> None:
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.table import Table

    if getattr(Table, "_testbed_ttl", False):
        return
    create = Table.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create_with_ttl(
        cls: type[Table], /, resource_name: str, cloudformation_json: dict[str, Any], account_id: str,
        region_name: str, **kwargs: Any,
    ) -> Table:  # fmt: skip
        table = create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        ttl = cloudformation_json["Properties"].get("TimeToLiveSpecification")
        if ttl:
            dynamodb_backends[account_id][region_name].update_time_to_live(table.name, ttl)
        return table  # type: ignore[no-any-return]

    Table.create_from_cloudformation_json = classmethod(create_with_ttl)  # type: ignore[method-assign,assignment]
    Table._testbed_ttl = True  # type: ignore[attr-defined]


def install() -> None:
    """The alias is a model by being a subclass (moto lists them once: listed again here); the version gets its
    attribute; a table gets its TTL."""
    from moto.awslambda.models import LambdaVersion
    from moto.cloudformation import parsing

    _table_with_ttl()

    def version_attribute(self: Any, attribute_name: str) -> str:
        if attribute_name == "Version":
            return str(self.version)
        raise NotImplementedError(f"AWS::Lambda::Version.{attribute_name}")

    LambdaVersion.get_cfn_attribute = version_attribute  # type: ignore[attr-defined]
    LambdaVersion.has_cfn_attr = classmethod(lambda cls, attr: attr == "Version")  # type: ignore[assignment]
    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()
