"""Session fixtures of the integration tests that need the synthesized template, the real Lambda runtime or
aws-node-termination-handler (built in the background as soon as a test that needs it is collected)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.runtime import LambdaRuntime, build_runtime_root, build_task_root

SERVED = "blue"
REPO = Path(__file__).resolve().parents[2]
NTH_BUILD = REPO / "build" / "build-nth.sh"
NTH_BUILD_LOG = REPO / ".local" / "build-nth.log"


def pytest_collection_finish(session: pytest.Session) -> None:
    """aws-node-termination-handler takes ~9 min to build on a bare machine: start it as soon as a test that needs
    it (fixture ``nth_binary``) is collected, so it builds while the other tests run."""
    if any("nth_binary" in getattr(item, "fixturenames", ()) for item in session.items):
        start_nth_build()


def start_nth_build() -> None:
    """build/build-nth.sh (its compiler niced) in the background, unless NTH is built or a build holds the script's
    lock (every xdist worker collects: the first one starts it)."""
    from bench import nth

    if os.access(nth.cache_root() / f"nth-{nth.NTH_VERSION}" / "bin" / "node-termination-handler", os.X_OK):
        return
    lock = nth.cache_root() / ".build-nth.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # a build is under way
        fcntl.flock(f, fcntl.LOCK_UN)
    NTH_BUILD_LOG.parent.mkdir(exist_ok=True)
    with NTH_BUILD_LOG.open("ab") as log:
        subprocess.Popen(
            ["bash", str(NTH_BUILD)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # outlives a worker that ends first; the next caller finds it cached
        )


@pytest.fixture(scope="session")
def nth_binary() -> Path:
    """aws-node-termination-handler, once the background build (or another one on this machine) is done."""
    done = subprocess.run(["bash", str(NTH_BUILD)], capture_output=True, text=True, check=False)  # waits on its lock
    if done.returncode != 0:
        pytest.fail(f"building aws-node-termination-handler failed (`bash {NTH_BUILD}`):\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A directory ``build`` fills once per test run: with xdist workers, the first worker to ask builds it in the
    run's shared temporary directory while the others wait on a lock, and all read it (a CDK synth or a bundle per
    worker would be paid again on each one)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        directory = tmp_path_factory.mktemp(name)
        build(directory)
        return directory
    shared = tmp_path_factory.getbasetemp().parent  # <run's basetemp>/popen-gwN: the parent is the run's
    directory, done = shared / name, shared / f"{name}.done"
    with (shared / f"{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if directory.exists():
                shutil.rmtree(directory)  # a worker that failed half-way
            directory.mkdir()
            build(directory)
            done.touch()
    return directory


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The CloudFormation template the CDK app synthesizes for the cluster the tests serve (no asset bundling)."""

    def synth(directory: Path) -> None:
        from tests.infra.conftest import synthesize

        raw = synthesize({"clusters": SERVED}, directory / "cdk.out").raw
        (directory / "template.json").write_text(json.dumps(raw))

    raw: dict[str, Any] = json.loads((once_per_run(tmp_path_factory, "template", synth) / "template.json").read_text())
    return raw


@pytest.fixture(scope="session")
def lambda_roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The code asset for this machine (the CDK bundler's recipe) and the runtime client, built once (runtimes
    mount them read-only)."""

    def build(directory: Path) -> None:
        build_task_root(directory)
        build_runtime_root(directory)

    directory = once_per_run(tmp_path_factory, "lambda", build)
    return directory / "task", directory / "runtime"


@pytest.fixture
def real_lambda(
    testbed: Testbed, aws: AwsSeed, template: dict[str, Any], lambda_roots: tuple[Path, Path]
) -> Iterator[Callable[..., LambdaRuntime]]:
    """Start the function under the Runtime Interface Emulator with the template's handler and environment,
    the role's credentials and access entry on the served cluster, and ``settings`` on top; a fresh (cold)
    runtime per test. Stopped at teardown."""
    from testbed.binaries import locate_binaries
    from tests.integration.lambda_support import deployed_function

    started: list[LambdaRuntime] = []

    def start(**settings: str) -> LambdaRuntime:
        env, _queue = aws.lambda_env(SERVED)
        function = deployed_function(template, env)
        runtime = LambdaRuntime.start(testbed, locate_binaries(), function, {**env, **settings}, lambda_roots)
        started.append(runtime)
        return runtime

    yield start
    for runtime in started:
        runtime.stop()
