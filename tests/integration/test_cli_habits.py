"""The command line keeps kubectl's and the AWS tools' habits, on the bed: a KUBECONFIG listing several files is
merged as kubectl merges them; AWS_REGION alone names the region (docs/operations.md's `status` example); flags
taking seconds take Go durations; `--json` keeps stdout to the one document; `--version` says the release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drain_orchestrator import __version__
from testbed.aws_seed import AwsSeed
from testbed.bed import REGION, Testbed
from testbed.kube import KubeScenario
from tests.integration.cli_support import run_cli
from tests.integration.drain_support import pods_on

pytestmark = pytest.mark.integration


def _split_kubeconfig(testbed: Testbed, tmp_path: Path) -> str:
    """Two files as a team keeps them: the first names the current context and another cluster, the second holds
    the bed's cluster, user and context, its certificate paths relative to itself."""
    bed = json.loads(testbed.kubeconfig.read_text())
    elsewhere = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "testbed",
        "clusters": [{"name": "staging", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "staging", "user": {"token": "not-the-bed"}}],
        "contexts": [{"name": "staging", "context": {"cluster": "staging", "user": "staging"}}],
    }
    first = tmp_path / "config"
    first.write_text(json.dumps(elsewhere))
    second_dir = tmp_path / "bed"
    second_dir.mkdir()
    for entry, fields in ((bed["clusters"][0]["cluster"], ("certificate-authority",)),
                          (bed["users"][0]["user"], ("client-certificate", "client-key"))):  # fmt: skip
        for name in fields:
            source = Path(entry[name])
            (second_dir / source.name).write_bytes(source.read_bytes())
            entry[name] = source.name  # relative to the second file
    bed.pop("current-context")
    second = second_dir / "kubeconfig"
    second.write_text(json.dumps(bed))
    return f"{first}:{tmp_path / 'missing'}:{second}"


def test_a_kubeconfig_list_is_merged_and_json_keeps_stdout_to_the_document(
    testbed: Testbed, k8s: KubeScenario, tmp_path: Path
) -> None:
    (node,) = k8s.add_nodes(1)
    k8s.deployment("web", 1, nodes=[node])
    k8s.wait_pods_ready("app=web", 1)
    env = {"KUBECONFIG": _split_kubeconfig(testbed, tmp_path)}

    done = run_cli("drain", node, "--timeout", "1m30s", "--json", env=env)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)  # the document alone: no progress line before it
    assert report["drained"] is True and len(report["evicted"]) == 1
    assert f"node/{node} cordoned" in done.stderr and f"drained node/{node}: 1 evicted" in done.stderr
    assert [p for p in pods_on(k8s, node) if not p.metadata.deletion_timestamp] == []

    other = run_cli("uncordon", node, "--context", "staging", env=env)  # the first file's own context
    assert other.returncode == 1 and "host='127.0.0.1', port=9" in other.stderr, other.stderr
    back = run_cli("uncordon", node, env=env)
    assert (back.returncode, back.stdout.strip()) == (0, f"node/{node} uncordoned")

    gone = run_cli("drain", node, env={"KUBECONFIG": f"{tmp_path / 'missing'}:{tmp_path / 'gone'}"})
    assert gone.returncode == 2
    assert f"KUBECONFIG={tmp_path / 'missing'}:{tmp_path / 'gone'}: none of its files exists" in gone.stderr


def test_durations_are_taken_where_seconds_are_and_bad_ones_named(testbed: Testbed, k8s: KubeScenario) -> None:
    (node,) = k8s.add_nodes(1)
    kubeconfig = ("--kubeconfig", str(testbed.kubeconfig))
    dry = run_cli("drain", node, "--dry-run", "--timeout", "5m", "--grace-period", "30s", *kubeconfig)
    assert dry.returncode == 0, dry.stderr
    plain = run_cli("drain", node, "--dry-run", "--timeout", "300", "--skip-wait-for-delete-timeout", "90", *kubeconfig)
    assert plain.returncode == 0, plain.stderr
    for flag, value, why in (
        ("--timeout", "5 minutes", "'5 minutes' is not a duration: expected seconds (300) or a duration such as"),
        ("--timeout", "-5s", "'-5s': expected at least 0s"),
        ("--grace-period", "1.5s", "'1.5s' is 1.5 s: expected whole seconds"),
        ("--deadline-in", "2d", "'2d' is not a duration"),
    ):
        bad = run_cli("drain", node, f"{flag}={value}", *kubeconfig)
        assert bad.returncode == 2 and f"argument {flag}: {why}" in bad.stderr, (flag, bad.stderr)
    assert not k8s.core.read_node(node).spec.unschedulable  # nothing ran


def test_aws_region_alone_is_the_region(aws: AwsSeed, k8s: KubeScenario, tmp_path: Path) -> None:
    aws.eks_cluster("blue")
    lambda_env, _queue = aws.lambda_env("blue")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),  # no ~/.aws/config to name a region
        "AWS_REGION": REGION,
        "CLUSTER_NAMES": "blue",
        **{k: v for k, v in lambda_env.items() if k.startswith("AWS_") and not k.endswith("_REGION")},
    }
    done = run_cli("status", env=env, inherit=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"drain-orchestrator {__version__}: read 1 of 1 clusters (blue)"

    nowhere = run_cli("status", env={k: v for k, v in env.items() if k != "AWS_REGION"}, inherit=False)
    assert nowhere.returncode == 1, nowhere.stderr
    assert "error: cluster blue: could not be read: eks: MissingRegion: no AWS region: set AWS_REGION" in nowhere.stderr


def test_version_and_help_for_people() -> None:
    version = run_cli("--version")
    assert (version.returncode, version.stdout) == (0, f"drain-orchestrator {__version__}\n")
    helped = run_cli("--help")
    assert helped.returncode == 0
    assert helped.stdout.startswith("usage: drain-orchestrator [-h] [--version] COMMAND ...")
    assert "\nexamples:\n  export CLUSTER_NAMES=prod AWS_REGION=eu-west-1\n" in helped.stdout
    commands = helped.stdout.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    listed = {line.split()[0] for line in commands.splitlines()[1:] if line.startswith("    ")}
    assert {"status", "history", "explain", "invoke", "drain", "uncordon", "approve", "rbac", "versions"} <= listed
