"""Helpers for the issue-4 integration tests: run the product's decision path the way the workflow will
(parse → facts → decide → connect → locate node → settle the hook) against moto server and the apiserver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from kubernetes import client as k8s

from drain_orchestrator.aws.clients import autoscaling_client, ec2_client, eks_client
from drain_orchestrator.aws.eks_auth import ClusterDescriber, TokenSource
from drain_orchestrator.decide import (
    BotoFacts,
    LifecycleOutcome,
    decide_event,
    locate_node,
    settle_lifecycle_without_node,
)
from drain_orchestrator.events import Interruption, parse_event
from drain_orchestrator.kube.client import ClusterConnector
from drain_orchestrator.ownership import Decision
from drain_orchestrator.settings import Settings

ROLE = "drain-orchestrator"
GROUP = "drain-orchestrator"


@dataclass
class Outcome:
    decision: Decision
    lifecycle: LifecycleOutcome


class Product:
    """The Lambda's view of the world: its assumed-role session, its settings, its per-container caches."""

    def __init__(self, session: boto3.Session, settings: Settings, *, clock: Any = None) -> None:
        self.session = session
        self.settings = settings
        self.ec2 = ec2_client(session)
        self.autoscaling = autoscaling_client(session)
        self.tokens = TokenSource(session, clock=clock) if clock is not None else TokenSource(session)
        self.connector = ClusterConnector(ClusterDescriber(eks_client(session)), self.tokens)
        self.metrics: list[tuple[str, dict[str, str]]] = []

    def process(self, raw: dict[str, Any]) -> list[Outcome]:
        event = parse_event(raw)
        assert isinstance(event, Interruption), event
        outcomes = []
        for assessment in decide_event(event, self.settings, BotoFacts(self.ec2, self.autoscaling)):
            decision = assessment.decision
            if decision.owned and decision.cluster is not None:
                core = k8s.CoreV1Api(self.connector.api_client(decision.cluster))
                decision = locate_node(core, assessment, event)
            lifecycle = settle_lifecycle_without_node(
                event, decision, self.autoscaling, metric=lambda n, d: self.metrics.append((n, d))
            )
            outcomes.append(Outcome(decision, lifecycle))
        return outcomes


def settings(**env: str) -> Settings:
    return Settings.from_env(env)


def grant(testbed: Any, aws: Any, cluster: str, *, groups: list[str] | None = None) -> None:
    """An EKS cluster pointing at the local apiserver, with an access entry for the Lambda's role."""
    aws.eks_cluster(cluster)
    testbed.put_access_entry(cluster, aws.role_arn(ROLE), f"{ROLE}:{cluster}", [GROUP] if groups is None else groups)


def action_state(aws: Any, instance_id: str) -> dict[str, Any]:
    [action] = [a for a in aws.lifecycle_actions() if a["instance_id"] == instance_id]
    return action
