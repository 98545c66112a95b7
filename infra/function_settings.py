"""The function's own settings validators, run at synth time on the values the construct deploys.

The one place infra runs the function's code: the modules `drain_orchestrator/settings_seam.py` lists (the seam both
sides own: `settings`, `workflow_settings` and the pure modules they import) are loaded from the sources the code
asset is built from (this checkout, or the copy inside the installed wheel) without the rest of the package: a bad
drain setting then fails `cdk synth` naming the variable instead of failing every event at cold start. They are
loaded under their own names but isolated: sys.modules is restored afterwards, and any import of another part of the
package (or of a third-party module) is refused, which keeps those modules pure.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .bundle import PACKAGE_NAME, SOURCE_ROOT

SEAM = "settings_seam"  # the function's module that lists the modules loaded here, in dependency order


class ImpureSettingsModule(RuntimeError):
    """A settings module imported something outside the stdlib and the pure modules: it can no longer be run at
    synth time, and the function would carry that dependency into its cold-start validation."""


@dataclass(frozen=True)
class FunctionSettingsProblem:
    variable: str
    message: str  # the function's own message: "<VARIABLE>: <problem>"


@dataclass(frozen=True)
class _Validators:
    settings: types.ModuleType
    workflow_settings: types.ModuleType
    modules: tuple[str, ...]  # every module loaded, in order


def _load(package_dir: Path, name: str) -> types.ModuleType:
    full = f"{PACKAGE_NAME}.{name}"
    spec = importlib.util.spec_from_file_location(full, package_dir / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImpureSettingsModule(f"cannot load {package_dir / name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as error:
        raise ImpureSettingsModule(f"{full} imports {error.name}: settings modules must stay pure") from None
    return module


def synth_modules() -> tuple[str, ...]:
    """The function's modules loaded at synth, as its settings_seam.py lists them."""
    return tuple(_validators().modules)


def _ours(name: str) -> bool:
    return name == PACKAGE_NAME or name.startswith(f"{PACKAGE_NAME}.")


@functools.cache
def _validators() -> _Validators:
    package_dir = SOURCE_ROOT / PACKAGE_NAME
    saved = {name: sys.modules.pop(name) for name in list(sys.modules) if _ours(name)}
    before = set(sys.modules)
    loaded: dict[str, types.ModuleType] = {}
    try:
        # a bare package with an empty search path: only the modules loaded below can be imported from it
        package = types.ModuleType(PACKAGE_NAME)
        package.__path__ = []
        sys.modules[PACKAGE_NAME] = package
        names: tuple[str, ...] = tuple(_load(package_dir, SEAM).SYNTH_MODULES)
        for name in names:
            loaded[name] = _load(package_dir, name)
        foreign = sorted(
            name
            for name in set(sys.modules) - before
            if not _ours(name) and name.partition(".")[0] not in sys.stdlib_module_names
        )
        if foreign:
            raise ImpureSettingsModule(f"settings modules imported {', '.join(foreign)}: they must stay pure")
    finally:
        for name in [name for name in sys.modules if _ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)
    return _Validators(loaded["settings"], loaded["workflow_settings"], (SEAM, *names))


def check_drain_settings(variables: Mapping[str, str]) -> FunctionSettingsProblem | None:
    """What `WorkflowSettings.from_env` says about these variables at cold start (None: accepted)."""
    validators = _validators()
    try:
        validators.workflow_settings.WorkflowSettings.from_env(dict(variables))
    except validators.settings.SettingsError as error:
        return FunctionSettingsProblem(variable=error.variable, message=str(error))
    return None


def bound_checked(variables: Mapping[str, str]) -> tuple[str, str]:
    """The variable that tells the function's cold start these settings' bound was checked here (at synth, by the
    same release's model), and its value; only for settings `check_drain_settings` accepted."""
    ws = _validators().workflow_settings
    return ws.BOUND_CHECKED_VARIABLE, ws.bound_digest(ws.WorkflowSettings.from_env(dict(variables)))


def check_cluster_endpoint(cluster: str, endpoint: str | None, ca_data: str | None) -> FunctionSettingsProblem | None:
    """What the function's settings code says, at cold start, about one cluster's CLUSTER_ENDPOINTS entry; a value
    only known at deploy time (a CDK token, given as None) is left to the function."""
    validators = _validators()
    try:
        if endpoint is not None:
            validators.settings.endpoint_url(cluster, endpoint)
        if ca_data is not None:
            validators.settings.ca_data(cluster, ca_data)
    except validators.settings.SettingsError as error:
        return FunctionSettingsProblem(variable=error.variable, message=str(error))
    return None


def loaded_from() -> str:
    """Where the validators came from (for tests and error reports)."""
    return str(SOURCE_ROOT / PACKAGE_NAME)
