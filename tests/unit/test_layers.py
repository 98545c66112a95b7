"""The layer rules of docs/architecture.md, read from the sources' imports (build/import_depth.py), lazy imports
included: the adapters never reach up, the pure core never reaches out, and no module grows past 400 lines."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "lambda_src" / "drain_orchestrator"
# the pure core at the package's top level (drain/ is the rest of it)
CORE = (
    "clip",
    "deadlines",
    "drain_claim",
    "events",
    "facts",
    "failures",
    "interruption",
    "kinds",
    "outcome",
    "ownership",
    "pacing",
    "restamp",
    "settings",
    "timefmt",
    "workflow_settings",
)
ADAPTERS = ("kube", "aws")
ABOVE_ADAPTERS = ("engine", "drain", "workflow", "cli", "handler", "decide")
MAX_LINES = 400


def _import_depth() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_depth", REPO / "build" / "import_depth.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_depth"] = module
    spec.loader.exec_module(module)
    return module


DEPTH = _import_depth()
GRAPH: dict[str, set[str]] = DEPTH.graph(SOURCE, lazy=True)


def _package(module: str) -> str:
    return module.split(".", maxsplit=1)[0]


def _reaching(modules: list[str], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    return {m: bad for m in modules if (bad := sorted(d for d in GRAPH[m] if _package(d) in forbidden))}


def test_the_graph_is_read_from_every_module() -> None:
    assert {"engine.drainer", "kube.pdb_watch", "workflow.drain_flow", "drain.turns"} <= GRAPH.keys()
    assert "kube.rest" in GRAPH["engine.drainer"]  # an import the engine has


def test_adapters_import_nothing_of_the_engine_the_drain_rules_or_the_workflow() -> None:
    adapters = [m for m in GRAPH if _package(m) in ADAPTERS]
    assert adapters
    assert _reaching(adapters, ABOVE_ADAPTERS) == {}


@pytest.mark.parametrize("forbidden", [ADAPTERS, ("engine", "workflow", "cli", "handler", "decide")])
def test_the_pure_core_imports_no_adapter_and_nothing_above_it(forbidden: tuple[str, ...]) -> None:
    core = [m for m in GRAPH if m in CORE or _package(m) == "drain"]
    assert len(core) > len(CORE)
    assert _reaching(core, forbidden) == {}


def test_the_engine_knows_nothing_of_durable_execution_or_the_command_line() -> None:
    engine = [m for m in GRAPH if _package(m) == "engine"]
    assert _reaching(engine, ("workflow", "cli", "handler")) == {}


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        str(p.relative_to(SOURCE)): n
        for p in SOURCE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_depth_is_the_longest_chain_of_imports() -> None:
    edges = {"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"a"}}
    assert DEPTH.longest_chain(edges) == ["d", "a", "b", "c"]
    assert DEPTH.packages({"x.one": {"y.two", "x.three"}, "x.three": set(), "y.two": set()}) == {"x": {"y"}, "y": set()}
    cyclic = {"a": {"b"}, "b": {"a", "c"}, "c": set()}
    assert DEPTH.longest_chain(cyclic) == ["a", "b", "c"]  # an edge back into the chain is not followed


DEPTHS = re.compile(
    r"--packages --lazy`\) is (?P<packages_lazy>\d+) imports deep: (?P<chain>[\w →\n]+?); (?P<packages>\d+) without"
    r".*?Between modules it is (?P<modules_lazy>\d+) deep with them \(`--lazy`\) and (?P<modules>\d+) without",
    flags=re.DOTALL,
)


def test_the_architecture_doc_states_the_import_depths_build_import_depth_finds() -> None:
    """The depths docs/architecture.md states are the tool's, and the chain it quotes is a real chain that long."""
    stated = DEPTHS.search((REPO / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert stated, "docs/architecture.md: no sentence stating the import depths"
    module_edges = DEPTH.graph(SOURCE, lazy=False)
    found = {
        "packages_lazy": len(DEPTH.longest_chain(DEPTH.packages(GRAPH))) - 1,
        "packages": len(DEPTH.longest_chain(DEPTH.packages(module_edges))) - 1,
        "modules_lazy": len(DEPTH.longest_chain(GRAPH)) - 1,
        "modules": len(DEPTH.longest_chain(module_edges)) - 1,
    }
    assert {k: int(stated[k]) for k in found} == found, "run build/import_depth.py and correct docs/architecture.md"
    chain = stated["chain"].split()[::2]  # the names between the arrows
    package_edges = DEPTH.packages(GRAPH)
    assert len(chain) == found["packages_lazy"] + 1
    assert [(a, b) for a, b in itertools.pairwise(chain) if b not in package_edges.get(a, set())] == []


# parameter names that hand an adapter something to call back with what it saw (an observer, a reporter)
CALLBACK_NAMES = re.compile(r"^(on_\w+|\w*callback|report|reporter|notify|listener|observer|tell|emit)$")


def test_no_adapter_takes_a_function_to_call_back_up() -> None:
    """kube/ and aws/ take no callback: what they notice they return, raise or keep for the caller to take
    (kube/client.py ``take_notices``); the functions they take are pure (what to write, from what a write read)."""
    taking = []
    for path in sorted(p for pkg in ADAPTERS for p in (SOURCE / pkg).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                taking += [f"{path.relative_to(SOURCE)}:{node.name}({n})" for n in names if CALLBACK_NAMES.match(n)]
    assert taking == []
