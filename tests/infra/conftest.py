"""Fixtures for the CDK tests: synthesized stacks per configuration, without bundling.

jsii starts its Node process on the first `aws_cdk` import and runs whatever `node` is first on PATH, so
the pinned Node 22 from node_modules goes first before any test module imports aws_cdk.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from testbed.pki import other_ca_pem

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_BIN = REPO_ROOT / "node_modules" / "node" / "bin"

if (NODE_BIN / "node").exists() and not os.environ.get("PATH", "").startswith(str(NODE_BIN)):
    os.environ["PATH"] = f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"

# A CA certificate for given cluster endpoints (the function's settings code loads it as a trust anchor).
CA_DATA = base64.b64encode(other_ca_pem("example-eks-ca")).decode()
# logical ids of the RBAC applier's resources (the construct DrainOrchestrator/Rbac)
RBAC_APPLIER_PREFIX = "DrainOrchestratorRbac"

# One cluster, everything else default.
SINGLE: dict[str, Any] = {"clusters": "prod"}
# Several clusters in a VPC, every option set (context values as the CLI passes them: strings).
MULTI_VPC: dict[str, Any] = {
    "clusters": "prod,staging,batch",
    "asgNames": "prod-workers,staging-workers",
    "lifecycleHookNames": "node-drainer",
    "createLifecycleHooks": "prod-workers,batch-spot",
    "createdHookName": "drain-orchestrator",
    "heartbeatTimeoutSeconds": "900",
    "ownershipTag": "example.com/eks-cluster",
    "actionRebalance": "ignore",
    "actionSpotInterruption": "drain",
    "actionCapacityReservationInterruption": "cordon",
    "actionStateChange": "cordon",
    "actionScheduledChange": "cordon",
    "vpcId": "vpc-0123456789abcdef0",
    "subnetIds": "subnet-0aaaaaaaaaaaaaaa1,subnet-0bbbbbbbbbbbbbbb2",
    "securityGroupIds": "sg-0ccccccccccccccc3",
    "alarmEmail": "oncall@example.com",
    "reservedConcurrency": "20",
    "memorySize": "1024",
    "timeoutSeconds": "900",
    "executionTimeoutHours": "48",
    "logRetentionDays": "90",
    "logLevel": "debug",
    "drainSettings": '{"DRAIN_GRACE_PERIOD": 30, "MAX_CONCURRENT_NODES": 8}',
    "surgeSweepMinutes": "0",
    "clusterEndpoints": json.dumps(
        {
            "prod": {
                "endpoint": "https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com",
                "certificateAuthorityData": CA_DATA,
            }
        }
    ),
}


# The combinations docs/deploy.md shows (besides SINGLE, the README's), as `-c` pairs.
DOCUMENTED_VPC: dict[str, Any] = {
    "clusters": "prod,staging",
    "asgNames": "prod-workers,staging-workers",
    "createLifecycleHooks": "prod-workers,staging-workers",
    "vpcId": "vpc-0123456789abcdef0",
    "subnetIds": "subnet-0aaaaaaaaaaaaaaa1,subnet-0bbbbbbbbbbbbbbb2",
    "securityGroupIds": "sg-0ccccccccccccccc3",
    "alarmEmail": "oncall@example.com",
}
DOCUMENTED_CONFIG_MAP: dict[str, Any] = {"clusters": "legacy", "createAccessEntries": "false"}


@dataclass
class Synthesized:
    template: Any  # aws_cdk.assertions.Template
    raw: dict[str, Any]
    stack: Any  # infra.stack.DrainOrchestratorStack
    outdir: Path

    def resources(self, type_name: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.raw["Resources"].items() if v["Type"] == type_name}

    def only(self, type_name: str) -> dict[str, Any]:
        found = list(self.resources(type_name).values())
        assert len(found) == 1, f"expected one {type_name}, found {len(found)}"
        props: dict[str, Any] = found[0].get("Properties", {})
        return props

    def drainer(self, type_name: str) -> dict[str, Any]:
        """The one resource of this type that is the drain function's own (its function, role, access entry),
        beside those of the RBAC applied with the deploy (infra/rbac_applier.py: construct `Rbac`)."""
        found = [r for k, r in self.resources(type_name).items() if not k.startswith(RBAC_APPLIER_PREFIX)]
        assert len(found) == 1, f"expected one {type_name} outside the RBAC applier, found {len(found)}"
        props: dict[str, Any] = found[0].get("Properties", {})
        return props


def synthesize(context: Mapping[str, Any], outdir: Path) -> Synthesized:
    """Synthesize the app as `cdk synth` would (cdk-nag included), but without bundling the asset."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Template
    from infra.app import build_app

    app = cdk.App(context={"aws:cdk:bundling-stacks": [], **context}, outdir=str(outdir))
    stack = build_app(app)
    assembly = app.synth()
    raw = json.loads(Path(assembly.get_stack_by_name(stack.stack_name).template_full_path).read_text())
    return Synthesized(template=Template.from_json(raw), raw=raw, stack=stack, outdir=outdir)


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Mapping[str, Any]], Synthesized]:
    """Synthesize once per distinct context and share the result across tests."""
    cache: dict[str, Synthesized] = {}

    def get(context: Mapping[str, Any]) -> Synthesized:
        key = json.dumps(context, sort_keys=True)
        if key not in cache:
            cache[key] = synthesize(context, tmp_path_factory.mktemp("cdk-out"))
        return cache[key]

    return get


@pytest.fixture(scope="session")
def single(synth: Callable[[Mapping[str, Any]], Synthesized]) -> Synthesized:
    return synth(SINGLE)


@pytest.fixture(scope="session")
def multi(synth: Callable[[Mapping[str, Any]], Synthesized]) -> Synthesized:
    return synth(MULTI_VPC)


# the uv `make setup-python` installs (the Makefile's UV), which builds the release's wheels
PINNED_UV = Path.home() / ".cache" / "drain-orchestrator" / "uv-0.13.8" / "bin" / "uv"


def uv() -> str:
    found = os.environ.get("UV") or (str(PINNED_UV) if PINNED_UV.exists() else shutil.which("uv"))
    if not found:
        pytest.fail("needs uv: run `make setup-python` (pinned uv) or put uv on PATH")
    return found


def release_script() -> ModuleType:
    """build/release.py (a script, not a package): what `make release` runs."""
    spec = importlib.util.spec_from_file_location("release", REPO_ROOT / "build" / "release.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def released(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The plain CloudFormation template `make release` ships (infra/release_template.py), built once a session."""
    from drain_orchestrator import __version__
    from infra import release_template

    return release_template.build(__version__, tmp_path_factory.mktemp("release-template"))
