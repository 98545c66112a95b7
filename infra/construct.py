"""`DrainOrchestrator`: everything one deployment needs - rules, function, permissions, cluster access,
dead letters, dashboard and alarms - as one reusable construct.

Props: `config` (an `OrchestratorConfig`, validated when built) plus CDK objects an app already has: its VPC,
subnets and security groups, its own notification or alarm topic, a KMS key. Attributes: `function`, `alias`,
`notification_topic`, `alarm_topic`, `delivery_dead_letters`, `failed_invocations`, `log_group`, `alarms`,
`rules` (per event kind; kinds sharing a rule name the same one), `security_groups`, `connections` (in a VPC),
`rbac` (the RBAC applied with the deploy: infra.rbac_applier), `shared_reads_table` (infra.shared_reads; None with
`shared_reads` off) and the `metric...()` helpers (infra.metrics).
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
import jsii
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from . import encryption, execution_role, failure_alarms, nag, shared_reads
from .config import OrchestratorConfig
from .environment import lambda_environment
from .event_rules import SWEEP_EVENT, rule_specs
from .lambda_code import lambda_code
from .metrics import OrchestratorMetrics
from .network import resolve_network
from .observability import DeadLetterQueue, Observability
from .permissions import function_statements
from .rbac_applier import RbacApplier

HANDLER = "drain_orchestrator.handler.handler"
KUBERNETES_GROUP = "drain-orchestrator"  # bound by infra/k8s/rbac.yaml
ALIAS_NAME = "live"
_IAM5 = "AwsSolutions::AwsSolutions-IAM5"
DEAD_LETTER_RETENTION = cdk.Duration.days(14)

# EventBridge -> Lambda delivery (only fails when the Invoke call itself fails, e.g. throttled).
TARGET_RETRY_ATTEMPTS = 20
TARGET_MAX_EVENT_AGE = cdk.Duration.hours(6)
# Lambda async invocation of the alias: function errors are retried twice, then sent to the on-failure queue.
ASYNC_RETRY_ATTEMPTS = 2
ASYNC_MAX_EVENT_AGE = cdk.Duration.hours(6)
DURABLE_RETENTION = cdk.Duration.days(14)

_APPLICATION_LOG_LEVEL = {
    "DEBUG": lambda_.ApplicationLogLevel.DEBUG,
    "INFO": lambda_.ApplicationLogLevel.INFO,
    "WARNING": lambda_.ApplicationLogLevel.WARN,
    "ERROR": lambda_.ApplicationLogLevel.ERROR,
}


@jsii.implements(ec2.IConnectable)
class DrainOrchestrator(Construct, OrchestratorMetrics):
    """Pass `code` to deploy a prebuilt asset; by default the code is bundled locally (infra.lambda_code).

    `vpc` (+ `vpc_subnets`, `security_groups`) places the function in the app's VPC (instead of
    `config.vpc`, the ids CDK context gives); without security groups one egress-only group is created.
    `notification_topic` / `alarm_topic` use the app's topics instead of creating them. `encryption_key`
    encrypts the notification topic, both queues, the log group, the shared-reads table and the durable executions'
    state with a customer-managed key; the alarm topic then gets a key of its own (encryption.py).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: OrchestratorConfig,
        code: lambda_.Code | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        notification_topic: sns.ITopic | None = None,
        alarm_topic: sns.ITopic | None = None,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self.encryption_key = encryption_key

        self.delivery_dead_letters = self._queue("DeliveryDeadLetterQueue")
        self.failed_invocations = self._queue("FailedInvocationQueue")
        self.notification_topic: sns.ITopic = notification_topic or sns.Topic(
            self,
            "NotificationTopic",
            display_name="EKS Drain Orchestrator notifications",
            enforce_ssl=True,
            master_key=encryption_key,
        )
        # never the customer key: a key of its own, so a disabled customer key cannot silence the alarms too
        self.alarm_topic_key = encryption.alarm_topic_key(self) if encryption_key and not alarm_topic else None
        self.alarm_topic: sns.ITopic = alarm_topic or sns.Topic(
            self,
            "AlarmTopic",
            display_name="EKS Drain Orchestrator alarms",
            enforce_ssl=True,
            master_key=self.alarm_topic_key,
        )
        if config.alarm_email:
            self.alarm_topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))

        self.log_group = logs.LogGroup(self, "LogGroup", removal_policy=cdk.RemovalPolicy.RETAIN)
        # RetentionDays' Python members carry names, not day counts; the validated number goes in directly.
        log_group_resource = self.log_group.node.default_child
        assert isinstance(log_group_resource, logs.CfnLogGroup)
        log_group_resource.retention_in_days = config.log_retention_days
        if encryption_key is not None:
            for queue in (self.delivery_dead_letters, self.failed_invocations):
                encryption.encrypt_queue(queue, encryption_key)
            encryption.encrypt_log_group(self.log_group, encryption_key)
            encryption.grant_service_writers(encryption_key)
        network = resolve_network(self, config.vpc, vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups)
        self.security_groups: list[ec2.ISecurityGroup] = network.security_groups if network else []
        # the group the construct created (None without a VPC or with the app's own groups)
        self.security_group = network.created_security_group if network else None
        function_code = code if code is not None else lambda_code()
        # throttled executions share one DescribeInstances through it (shared_reads.py); None with shared_reads off
        self.shared_reads_table = shared_reads.shared_reads_table(self, encryption_key) if config.shared_reads else None
        self.function = lambda_.Function(
            self,
            "Function",
            description="EKS Drain Orchestrator: cordons and drains nodes before their EC2 instances go away",
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.ARM_64,
            handler=HANDLER,
            code=function_code,
            memory_size=config.memory_size,
            timeout=cdk.Duration.seconds(config.timeout_seconds),
            reserved_concurrent_executions=config.reserved_concurrency,
            durable_config=lambda_.DurableConfig(
                execution_timeout=cdk.Duration.hours(config.execution_timeout_hours),
                retention_period=DURABLE_RETENTION,
            ),
            environment=lambda_environment(
                config,
                notification_topic_arn=self.notification_topic.topic_arn,
                shared_reads_table=self.shared_reads_table.table_name if self.shared_reads_table else None,
            ),
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=_APPLICATION_LOG_LEVEL[config.log_level],
            system_log_level_v2=lambda_.SystemLogLevel.INFO,
            log_group=self.log_group,
            vpc=network.vpc if network else None,
            vpc_subnets=network.subnets if network else None,
            security_groups=network.security_groups if network else None,
            # Durable executions resume on the version they started on, for up to the execution timeout:
            # a deploy must not delete it (old versions are pruned with `drain-orchestrator versions --prune`).
            current_version_options=lambda_.VersionOptions(removal_policy=cdk.RemovalPolicy.RETAIN),
        )
        cdk.Annotations.of(self.function).acknowledge_info(
            "aws-lambda:Function.DurableConfig",
            "The function is durable from its first deployment, so no replacement of a running function.",
        )
        for statement in function_statements(config):
            self.function.add_to_role_policy(statement)
        self.notification_topic.grant_publish(self.function)
        if self.shared_reads_table is not None:
            shared_reads.grant_shared_reads(self.function, self.shared_reads_table, encryption_key)
        if encryption_key is not None:  # the on-failure destination is written with the function's role
            encryption_key.grant(self.function, "kms:Decrypt", "kms:GenerateDataKey*")
        # logs and durable checkpoints on this function only, instead of the managed policy's `*`
        self.durable_execution_policy = execution_role.scope_execution_role(self, self.function, self.log_group)
        if encryption_key is not None:
            execution_role.encrypt_durable_state(self.function, encryption_key)

        # Durable functions reject unqualified ARNs: the alias is the only invoke target, and the async
        # invoke config lives on it (on the Function it would be written for $LATEST).
        self.alias = lambda_.Alias(
            self,
            "LiveAlias",
            alias_name=ALIAS_NAME,
            version=self.function.current_version,
            retry_attempts=ASYNC_RETRY_ATTEMPTS,
            max_event_age=ASYNC_MAX_EVENT_AGE,
            on_failure=destinations.SqsDestination(self.failed_invocations),
        )

        self.rules: dict[str, events.Rule] = {}
        for spec in rule_specs(config):
            rule = events.Rule(
                self,
                spec.construct_id,
                description=spec.description,
                event_pattern=events.EventPattern(
                    source=spec.pattern["source"],
                    detail_type=spec.pattern["detail-type"],
                    detail=spec.pattern.get("detail"),
                ),
            )
            rule.add_target(self._target())
            for kind in spec.kinds:  # a shared rule under each of its kinds
                self.rules[kind] = rule
        # surges left behind by lost executions are looked for on a schedule, not at every lone drain's verdict
        self.sweep_rule: events.Rule | None = None
        if config.surge_sweep_minutes:
            self.sweep_rule = events.Rule(
                self,
                "SurgeSweepRule",
                description="Look for surges left behind (surge before evict) in the served clusters",
                schedule=events.Schedule.rate(cdk.Duration.minutes(config.surge_sweep_minutes)),
            )
            self.sweep_rule.add_target(
                self._target(
                    events.RuleTargetInput.from_object(
                        {**SWEEP_EVENT, "id": events.EventField.event_id, "time": events.EventField.time}
                    )
                )
            )

        # the liveness check's schedule: the Liveness alarm hears its silence (failure_alarms.py)
        self.liveness_rule = events.Rule(
            self,
            "LivenessRule",
            description="Check that the drain orchestrator can be invoked and runs (the Liveness alarm)",
            schedule=events.Schedule.rate(cdk.Duration.minutes(failure_alarms.LIVENESS_MINUTES)),
        )
        self.liveness_rule.add_target(self._target(failure_alarms.liveness_input()))

        self.access_entries: list[eks.CfnAccessEntry] = []
        if config.create_access_entries:
            for cluster in config.clusters:
                self.access_entries.append(
                    eks.CfnAccessEntry(
                        self,
                        f"AccessEntry-{cluster}",
                        cluster_name=cluster,
                        principal_arn=self.role_arn,
                        type="STANDARD",
                        kubernetes_groups=[KUBERNETES_GROUP],
                    )
                )

        # after the function's access entries: a deploy that changes the RBAC applies it once the entries exist
        self.rbac: RbacApplier | None = None
        if config.applies_rbac:
            self.rbac = RbacApplier(
                self,
                "Rbac",
                clusters=config.clusters,
                code=function_code,
                log_group=self.log_group,
                network=network,
                surge=config.surge_enabled,
            )

        self.lifecycle_hooks = [
            autoscaling.CfnLifecycleHook(
                self,
                f"TerminateHook-{asg}",
                auto_scaling_group_name=asg,
                lifecycle_hook_name=config.created_hook_name,
                lifecycle_transition="autoscaling:EC2_INSTANCE_TERMINATING",
                heartbeat_timeout=config.heartbeat_timeout_seconds,
                # If the function never answers, let the instance go: draining is best effort.
                default_result="CONTINUE",
            )
            for asg in config.create_lifecycle_hooks
        ]

        self._drop_redundant_role_dependency()
        self.observability = Observability(
            self,
            "Observability",
            alias=self.alias,
            clusters=config.clusters,
            dead_letter_queues=[
                DeadLetterQueue("Delivery dead letters", self.delivery_dead_letters, "deliverydeadlettersnotempty"),
                DeadLetterQueue("Failed invocations", self.failed_invocations, "failedinvocationsnotempty"),
            ],
            alarm_topic=self.alarm_topic,
            log_group=self.log_group,
            function=self.function,
            rules=[
                *dict.fromkeys(self.rules.values()),  # the Capacity Block kinds share one rule
                *([self.sweep_rule] if self.sweep_rule else []),
                self.liveness_rule,
            ],
        )
        nag.acknowledge(self, config, execution_role.nag_findings(self.function))  # last: every resource exists

    def _target(self, event: events.RuleTargetInput | None = None) -> targets.LambdaFunction:
        return targets.LambdaFunction(
            self.alias,
            event=event,
            retry_attempts=TARGET_RETRY_ATTEMPTS,
            max_event_age=TARGET_MAX_EVENT_AGE,
            dead_letter_queue=self.delivery_dead_letters,
        )

    @property
    def connections(self) -> ec2.Connections:
        """The function's network connections (IConnectable), e.g. for
        `cluster_security_group.connections.allow_from(orchestrator, ec2.Port.tcp(443))`. Only in a VPC."""
        if not self.security_groups:
            raise ValueError("connections: the function runs outside a VPC (give config.vpc or the vpc prop)")
        return self.function.connections

    @property
    def alarms(self) -> list[cw.Alarm]:
        """Every alarm the construct creates (each already notifies the alarm topic)."""
        return list(self.observability.alarms)

    def grant_approve(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let an operator (a role, user or group) answer held drains' approvals (HELD_APPROVAL=on,
        `drain-orchestrator approve`): lambda:SendDurableExecutionCallbackSuccess on this function's executions.
        The function itself needs nothing to wait on its callbacks."""
        return self._grant_on_executions(grantee, ["lambda:SendDurableExecutionCallbackSuccess"])

    def grant_read_history(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let an operator read drains' timelines (`drain-orchestrator history`): list this function's durable
        executions and read their histories; nothing that changes, stops or answers a drain."""
        actions = ["lambda:ListDurableExecutionsByFunction", "lambda:GetDurableExecutionHistory"]
        return self._grant_on_executions(grantee, actions)

    def _grant_on_executions(self, grantee: iam.IGrantable, actions: list[str]) -> iam.Grant:
        grant = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=actions,
            # executions run on a published version (version-qualified ARNs): ":*" is this function's versions
            resource_arns=[self.function.function_arn, f"{self.function.function_arn}:*"],
        )
        if isinstance(grantee, Construct):
            default = self.function.node.default_child
            assert isinstance(default, cdk.CfnElement)
            finding = f"{_IAM5}[Resource::<{cdk.Stack.of(self).get_logical_id(default)}.Arn>:*]"
            reason = "The `*` stands for this function's versions, which its durable executions run on."
            nag.acknowledge_findings(grantee, {finding: reason})
        return grant

    @property
    def role_arn(self) -> str:
        role = self.function.role
        assert role is not None  # Function always creates one when none is passed
        return role.role_arn

    def _queue(self, construct_id: str) -> sqs.Queue:
        return sqs.Queue(
            self,
            construct_id,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DEAD_LETTER_RETENTION,
            # the events of drains that never ran outlive `cdk destroy` (they expire after the retention period)
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )

    def _drop_redundant_role_dependency(self) -> None:
        """CDK makes the function DependsOn both its role and the role's policy; the role is already a
        GetAtt in Properties.Role (cfn-lint W3005). Keep only the policy: the function must not run before
        its permissions exist."""
        role = self.function.role
        policy = role.node.try_find_child("DefaultPolicy") if role is not None else None
        policy_resource = policy.node.default_child if policy is not None else None
        function_resource = self.function.node.default_child
        if isinstance(policy_resource, cdk.CfnResource) and isinstance(function_resource, cdk.CfnResource):
            function_resource.add_override("DependsOn", [cdk.Stack.of(self).get_logical_id(policy_resource)])
