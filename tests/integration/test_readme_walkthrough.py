"""The README's command-line walk-through, run as written (the fenced block after its marker) with bash against
the session's bed, seeded the way `make demo` seeds it. Nothing from the test's own environment helps: the AWS
variables, CLUSTER_NAMES, KUBECONFIG and .venv/bin on PATH must all come from `eval "$(make -s env)"`."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

import pytest
from kubernetes import client as k8s_client

from testbed import demo
from testbed.aws_seed import AwsSeed
from testbed.bed import REPO, Testbed
from testbed.local_env import prepare_walkthrough
from tests.integration.ownership_support import action_state

pytestmark = pytest.mark.integration

MARKER = "<!-- walkthrough: tests/integration/test_readme_walkthrough.py runs this block as written -->"
# what `make -s env` must provide; the test's own session sets some of them, so they are removed first
PROVIDED = ("AWS_", "CLUSTER_NAMES", "LIFECYCLE_HOOK_NAMES", "KUBECONFIG", "DEMO_", "NOTIFICATION_TOPIC_ARN", "DRY_RUN")


def readme_walkthrough() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(re.escape(MARKER) + r"\n```sh\n(.*?)\n```", text, flags=re.DOTALL)
    assert found, "README.md: no ```sh block right after the walk-through marker"
    return found.group(1)


def _clean_env(bed: Testbed) -> dict[str, str]:
    venv_bin = str(REPO / ".venv" / "bin")
    env = {k: v for k, v in os.environ.items() if not k.startswith(PROVIDED)}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    env["DRAIN_TESTBED_DIR"] = str(bed.dir)
    env.pop("VIRTUAL_ENV", None)
    for key in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # a reader's shell is not inside make (`make -s env` prints)
        env.pop(key, None)
    return env


def _json_documents(out: str) -> list[Any]:
    """The indented JSON objects explain and invoke print, in order (drain's text lines are skipped)."""
    return [json.loads(m) for m in re.findall(r"^\{$.*?^\}$", out, flags=re.MULTILINE | re.DOTALL)]


def test_readme_walkthrough_runs_as_written(testbed: Testbed) -> None:
    script = readme_walkthrough()
    world = demo.seed(testbed)
    prepare_walkthrough(testbed, world["blue"])
    aws = AwsSeed(testbed)
    instance, spare = world["blue"][3], world["blue"][4]
    node, spare_node = aws.describe(instance)["PrivateDnsName"], aws.describe(spare)["PrivateDnsName"]
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=REPO,
            env=_clean_env(testbed),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"walk-through failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"

        explained, spot, dry_run, invoked = _json_documents(done.stdout)[:4]
        assert explained["decisions"][0] | {"node": node} == explained["decisions"][0]
        assert explained["decisions"][0]["owned"] and explained["decisions"][0]["action"] == "drain"
        assert explained["event"]["deadline"].endswith("Z") and explained["event"]["seconds_left"] > 0
        assert 60 < spot["event"]["seconds_left"] <= 120  # --now: the warning's two minutes start now
        assert dry_run["status"] == "SUCCEEDED" and invoked["status"] == "SUCCEEDED"
        (drained,) = invoked["result"]["instances"]
        assert drained["result"] == "drained" and drained["lifecycle"]["outcome"] == "completed"
        assert action_state(aws, instance)["state"] != "ACTIVE"  # the hook was answered

        with testbed.admin_api_client() as api:
            core = k8s_client.CoreV1Api(api)
            assert not core.read_node(node).spec.unschedulable  # uncordoned
            assert core.read_node(spare_node).spec.unschedulable  # drained by hand
            left = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={spare_node}").items
            owners = {ref.kind for p in left for ref in (p.metadata.owner_references or [])}
            assert owners <= {"DaemonSet"}, f"pods left on {spare_node}: {[p.metadata.name for p in left]}"

        # status, last: the spare drained by hand is listed, held by its instance's target in the demo's target group
        table = done.stdout[done.stdout.rindex("CLUSTER  NODE") :].splitlines()
        assert table[0].split()[:7] == ["CLUSTER", "NODE", "PHASE", "KIND", "DEADLINE", "LEFT", "HOLDS"]
        rows = {line.split()[1]: line for line in table[1:]}
        assert rows[spare_node].startswith("blue ")
        assert rows[spare_node].endswith(f"target {demo.TARGET_GROUP} ({spare}): healthy")
        assert node not in rows  # uncordoned: the drain's marks are gone
    finally:
        with testbed.admin_api_client() as api:
            for scenario in world["scenarios"]:
                scenario.core = k8s_client.CoreV1Api(api)
                scenario.cleanup()
