"""Every user error of the command line exits 2 with one line on stderr, never a traceback (run as processes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testbed import samples
from testbed.bed import REPO
from tests.integration.cli_support import run_cli

pytestmark = pytest.mark.integration

SPOT = str(samples.EVENTS_DIR / "spot-interruption-terminate.json")
# a clean environment: no AWS endpoint or credentials of the test bed leak in, nothing is reachable
BASE_ENV = {
    "PATH": os.environ.get("PATH", ""),
    "HOME": os.environ.get("HOME", ""),
    "PYTHONPATH": f"{REPO / 'lambda_src'}:{REPO}",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "CLUSTER_NAMES": "blue",
}


def _cli(*args: str, **env: str) -> tuple[int, str, str]:
    proc = run_cli(*args, env={**BASE_ENV, **env}, inherit=False)
    return proc.returncode, proc.stdout, proc.stderr


def _rejected(result: tuple[int, str, str], *fragments: str) -> None:
    code, out, err = result
    assert code == 2, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    assert err.count("\n") == 1 and len(err) < 1000, err  # one line, bounded
    for fragment in fragments:
        assert fragment in err, err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    nested = dict(samples.load("spot-interruption-terminate.json"))
    inner: dict[str, object] = {}
    nested["detail"] = {**nested["detail"], "extra": inner}
    for _ in range(60):  # parses fine with json, deeper than any AWS event
        inner["x"] = {}
        inner = inner["x"]  # type: ignore[assignment]
    too_deep = tmp_path / "too-deep.json"
    too_deep.write_text(json.dumps(nested))
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({**samples.load("spot-interruption-terminate.json"), "detail-type": "x" * 5_000_000}))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("clusters: [1, 2\n")
    return {
        "deep": str(deep),
        "too_deep": str(too_deep),
        "huge": str(huge),
        "bad": str(bad),
        "kubeconfig": str(kubeconfig),
        "missing": str(tmp_path / "missing.json"),
    }


def test_explain_rejects_unreadable_and_hostile_files(files: dict[str, str]) -> None:
    _rejected(_cli("explain", files["missing"]), "missing.json")
    _rejected(_cli("explain", files["bad"]), "Expecting property name")
    _rejected(_cli("explain", files["deep"]), "nested too deeply")
    _rejected(_cli("explain", files["too_deep"]), "nested deeper than 32 levels")
    _rejected(_cli("explain", files["huge"]), "over EventBridge's event size limit of 262144 bytes")


def test_explain_rejects_bad_settings_and_endpoints() -> None:
    _rejected(_cli("explain", SPOT, CLUSTER_NAMES="blue\n,-x"), "CLUSTER_NAMES")
    _rejected(_cli("explain", SPOT, AWS_ENDPOINT_URL="junk"), "AWS client configuration", "junk")
    _rejected(_cli("explain", SPOT, DRAIN_TAINT="bad_key=x/y!:NoSchedule"), "DRAIN_TAINT: ")
    _rejected(_cli("explain", SPOT, POWERTOOLS_LOG_LEVEL="junk"), "POWERTOOLS_LOG_LEVEL: ")


def test_explain_clips_a_long_detail_type_it_echoes(tmp_path: Path) -> None:
    event = tmp_path / "long.json"
    event.write_text(json.dumps({**samples.load("spot-interruption-terminate.json"), "detail-type": "y" * 200_000}))
    code, out, err = _cli("explain", str(event))
    assert code == 0, err
    report = json.loads(out)
    assert report["event"]["ignored"] == "unsupported"
    assert "(200000 chars)" in report["event"]["message"] and len(out) < 1000


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DRAIN_TAINT", "bad_key=x/y!:NoSchedule"),
        ("DEADLINE_STATE_CHANGE_SECONDS", "99999999999999999999"),
        ("POWERTOOLS_LOG_LEVEL", "junk"),
        ("RECHECK_MAX_SECONDS", "\uff11\uff12"),  # full-width digits
        ("LAUNCH_READY_TIMEOUT_SECONDS", "999999"),
    ],
)
def test_invoke_rejects_each_bad_setting_by_name(variable: str, value: str) -> None:
    _rejected(_cli("invoke", SPOT, **{variable: value}), f"{variable}: ")


def test_invoke_rejects_hostile_files_and_endpoints(files: dict[str, str]) -> None:
    _rejected(_cli("invoke", files["deep"]), "nested too deeply")
    _rejected(_cli("invoke", files["bad"]), "cannot read")
    _rejected(_cli("invoke", SPOT, AWS_ENDPOINT_URL="junk"), "AWS client configuration")


def test_drain_and_uncordon_reject_a_bad_kubeconfig(files: dict[str, str]) -> None:
    _rejected(_cli("drain", "node-1", "--kubeconfig", files["missing"]), "cannot use kubeconfig", "missing.json")
    _rejected(_cli("uncordon", "node-1", "--kubeconfig", files["kubeconfig"]), "cannot use kubeconfig")
    _rejected(_cli("drain", "node-1", "--kubeconfig", files["kubeconfig"], "--concurrency", "0"), "--concurrency")
