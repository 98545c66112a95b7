"""A function with published versions on the real-runtime path: what a deploy does to running executions.

- The function, its versions and its alias live in the AWS emulator (moto: CreateFunction, PublishVersion,
  CreateAlias / UpdateAlias, DeleteFunction with a Qualifier); a version's configuration is what was published.
- Each published version runs in its own Runtime Interface Emulator on its own copy of the code asset, in a network
  namespace of its own (the runtime API always binds 127.0.0.1:9001), bridged to the bed (netns_bridge.py).
- One durable-execution service invokes through a Lambda front (lambda_front.py) that routes ``NAME:VERSION`` to
  that version's emulator. An execution is started on the version the alias points at when its event arrives
  (what an EventBridge rule targeting the alias does) and stays on it: the service re-invokes the same qualifier
  after every wait.
- The front is also the Lambda endpoint operators' tools use (``AWS_ENDPOINT_URL_LAMBDA``): functions, versions
  and aliases from moto, ListDurableExecutionsByFunction from the durable-execution service.
"""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

from testbed.bed import Testbed
from testbed.binaries import BinDir
from testbed.lambda_front import LambdaFront
from testbed.netns_bridge import NetnsBridge
from testbed.procs import free_port
from testbed.runtime import FunctionConfig, LambdaRuntime, RuntimeStartError

ALIAS = "live"


class VersionedRuntime(LambdaRuntime):
    """Durable-execution service + Lambda front for ``function``, and an emulator per published version."""

    def __init__(self, bed: Testbed, directory: Path, function: str, aws: Any) -> None:
        super().__init__(bed, directory, invoke_port=free_port(), service_port=free_port())
        self.function, self.aws = function, aws  # aws: a boto3 Lambda client on the AWS emulator
        self.front = LambdaFront(bed.aws_endpoint, self.service)
        self.bridges: list[NetnsBridge] = []
        self.logs_of: dict[str, Path] = {}  # version -> its emulator's log

    @classmethod
    def start(cls, bed: Testbed, directory: Path, function: str, aws: Any, role_arn: str) -> VersionedRuntime:
        if os.geteuid() != 0:  # setns(2) into the emulators' namespaces needs CAP_SYS_ADMIN on the host
            raise RuntimeStartError("two function versions side by side need network namespaces: run as root")
        rt = cls(bed, directory, function, aws)
        try:
            rt._start_service(lambda_endpoint=rt.front.url)
            package = io.BytesIO()  # moto keeps the package; the emulators run the real asset
            with zipfile.ZipFile(package, "w") as z:
                z.writestr("placeholder.txt", "code runs from the emulator's task root")
            aws.create_function(
                FunctionName=function, Runtime="python3.13", Role=role_arn, Handler="placeholder.handler",
                Code={"ZipFile": package.getvalue()},
            )  # fmt: skip
        except BaseException:
            rt.stop()
            raise
        return rt

    @property
    def lambda_endpoint(self) -> str:
        return self.front.url

    def publish(
        self,
        bins: BinDir,
        function: FunctionConfig,
        env: dict[str, str],
        roots: tuple[Path, Path],
    ) -> str:
        """Publish a version with ``function``'s configuration and a copy of the code at ``roots[0]``, start its
        emulator, and return the version number. The alias does not move (``point_alias``)."""
        task, runtime_root = roots
        self.aws.update_function_configuration(
            FunctionName=self.function, Environment={"Variables": function.environment}
        )
        self._wait_updated()
        version = str(self.aws.publish_version(FunctionName=self.function)["Version"])
        code = self.dir / f"task-v{version}"  # the version's own, immutable copy of the asset
        if code.exists():
            shutil.rmtree(code)
        shutil.copytree(task, code, symlinks=True)
        name = f"lambda-rie-v{version}"
        lambda_env = {
            **env,
            "AWS_LAMBDA_FUNCTION_NAME": self.function,
            "AWS_LAMBDA_FUNCTION_VERSION": version,
        }
        proc = self._start_emulator(bins, function, lambda_env, code, runtime_root, name=name, private_network=True)
        bridge = self._bridge(proc.pid, name)
        self.logs_of[version] = self.bed.logs / f"{name}.log"
        self.front.versions[version] = f"http://127.0.0.1:{bridge.outbound(self.invoke_port)}"
        return version

    def point_alias(self, version: str) -> None:
        try:
            self.aws.update_alias(FunctionName=self.function, Name=ALIAS, FunctionVersion=version)
        except self.aws.exceptions.ResourceNotFoundException:
            self.aws.create_alias(FunctionName=self.function, Name=ALIAS, FunctionVersion=version)

    def alias_version(self) -> str:
        return str(self.aws.get_alias(FunctionName=self.function, Name=ALIAS)["FunctionVersion"])

    def deliver(self, event: dict[str, Any], name: str) -> str:
        """An event through the alias: the execution starts on (and stays bound to) the version it points at now.
        The front knows it was started through the alias (listed so under durable_listing.ALIAS_ARNS)."""
        arn = self.start_execution(event, name, function=self.function, qualifier=self.alias_version())
        self.front.invoked_as[arn] = ALIAS
        return arn

    def _wait_updated(self) -> None:
        self._wait(
            "the configuration update",
            lambda: (
                self.aws.get_function_configuration(FunctionName=self.function).get("LastUpdateStatus", "Successful")
                == "Successful"
            ),
        )

    def _bridge(self, pid: int, name: str) -> NetnsBridge:
        """Once the emulator's namespace exists and it listens there, give it the bed's ports."""
        host = Path("/proc/self/ns/net").readlink()
        self._wait(f"{name}'s network namespace", lambda: Path(f"/proc/{pid}/ns/net").readlink() != host)
        bridge = NetnsBridge(pid)
        self.bridges.append(bridge)
        self._wait(f"{name} listening", lambda: bridge.port_open(self.invoke_port))
        state = self.bed.state
        for port in (state.aws_port, state.apiserver_port, self.service_port):
            bridge.inbound(port)
        return bridge

    def stop(self) -> None:
        super().stop()
        for bridge in self.bridges:
            bridge.close()
        self.bridges = []
        self.front.close()
