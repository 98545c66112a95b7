"""The one way to reach an apiserver, for the Lambda and every CLI command: a counted REST handle (kube/rest.py) on

- an EKS cluster by name: the endpoint and CA (always verified) from DescribeCluster or the settings, a presigned
  STS token that is renewed before it expires and once more after a 401 (kube/client.py, aws/eks_auth.py); or
- a kubeconfig: a direct TLS connection (kube/kubeconfig.py), or, for users that need an exec plugin or an
  auth-provider (``aws eks get-token``), the generated kubernetes client, which runs them (the CLI only: the Lambda
  does not ship that package, and it costs over a second to import).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drain_orchestrator.kube.kubeconfig import connection_from_kubeconfig, kubeconfig_files
from drain_orchestrator.kube.rest import Kube

if TYPE_CHECKING:
    from drain_orchestrator.kube.client import ClusterConnector


def connect(
    *,
    cluster: str | None = None,
    kubeconfig: str | Path | None = None,
    context: str | None = None,
    pool_size: int = 32,
    connector: ClusterConnector | None = None,
) -> Kube:
    """A Kube on the EKS cluster ``cluster`` (token auth; ``connector`` caches connections and tokens per cluster), or,
    without a cluster, on ``kubeconfig``'s ``context`` (default: the files kubectl would read, merged as it merges
    them: kube/kubeconfig.py; the current context)."""
    if cluster is not None:
        if kubeconfig is not None or context is not None:
            raise ValueError("connect: give either cluster (EKS) or kubeconfig/context, not both")
        if connector is None:
            from drain_orchestrator.kube.client import ClusterConnector  # noqa: PLC0415 - boto3 only for EKS

            connector = ClusterConnector()
        return Kube(connection=connector.connection(cluster, pool_size))
    files = kubeconfig_files(kubeconfig)
    connection = connection_from_kubeconfig(files, context, pool_size)
    if connection is not None:
        return Kube(connection=connection)
    return Kube(_generated_client(os.pathsep.join(str(f) for f in files), context), pool_size=pool_size)


def _generated_client(path: str, context: str | None) -> Any:
    """The kubernetes client from a kubeconfig: it runs exec plugins and auth providers (and merges a
    ``:``-separated list of files as kubectl does)."""
    from kubernetes import config as k8s_config  # noqa: PLC0415 - costs > 1 s, only for these users

    return k8s_config.new_client_from_config(config_file=path, context=context)  # type: ignore[no-untyped-call]
