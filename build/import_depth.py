"""The import graph of the function's package, read from the sources with ``ast`` (nothing is imported).

    python build/import_depth.py            the depth (longest chain of imports between modules) and that chain
    python build/import_depth.py --lazy     the same, counting the imports inside functions too
    python build/import_depth.py --packages the same between packages (``engine/``, ``kube/``, … and each module
                                            at the top of the package stands for itself)
    python build/import_depth.py --layers   also each module's layer (1: imports no module of the package)

The depth is the number of imports on the longest chain ``a imports b imports c …`` (a chain of n modules is n - 1
deep; a module that imports none of the package is at depth 0). Imports inside functions (the lazy ones: a step
loads the drain engine when it runs) are left out by default, as they are not loaded with the module; they can make
cycles, which ``--lazy`` breaks by not following an edge back into the chain being walked. Imports under
``if TYPE_CHECKING:`` are for the type checker only and never counted.

``tests/unit/test_layers.py`` uses ``graph`` to check the layer rules of docs/architecture.md.
"""

from __future__ import annotations

import argparse
import ast
import functools
import sys
from pathlib import Path

PACKAGE = "drain_orchestrator"
SOURCE = Path(__file__).resolve().parent.parent / "lambda_src" / PACKAGE


def module_name(path: Path, root: Path = SOURCE) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:``: its imports are for the type checker, not loaded at run time."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.Module, *, lazy: bool) -> list[ast.AST]:
    """The statements whose imports load with the module (``lazy``: and those inside functions)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if _type_checking(node):
            continue
        out.append(node)
        if lazy or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
        elif isinstance(node, ast.ClassDef):  # a class body runs at import; its methods' bodies do not
            todo.extend(n for n in node.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return out


def _imported(tree: ast.Module, *, lazy: bool) -> set[str]:
    """The package's modules ``tree`` imports (relative to the package: ``engine.drainer``)."""
    out: set[str] = set()
    for node in _nodes(tree, lazy=lazy):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        out |= {n.removeprefix(f"{PACKAGE}.") for n in names if n == PACKAGE or n.startswith(f"{PACKAGE}.")}
    return out


def graph(root: Path = SOURCE, *, lazy: bool = False) -> dict[str, set[str]]:
    """Module → the package's modules it imports (a package's ``__init__`` is the package's name)."""
    sources = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    edges: dict[str, set[str]] = {}
    for name, path in sources.items():
        wanted = _imported(ast.parse(path.read_text(), str(path)), lazy=lazy)
        edges[name] = {m for m in wanted if m in sources and m not in ("", name)}
    return edges


def packages(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between packages: ``engine.drainer`` imports ``kube.rest`` becomes ``engine`` imports ``kube``."""
    out: dict[str, set[str]] = {}
    for name, deps in edges.items():
        top = name.split(".")[0] or PACKAGE
        out.setdefault(top, set()).update(d.split(".")[0] for d in deps if d.split(".")[0] != top)
    return out


def longest_chain(edges: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports, first importer first (an edge back into the chain is not followed)."""

    @functools.cache
    def from_(name: str, path: frozenset[str]) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for dep in sorted(edges.get(name, ())):
            if dep in path:
                continue
            chain = from_(dep, path | {dep})
            if len(chain) > len(best):
                best = chain
        return (name, *best)

    acyclic = not _has_cycle(edges)
    chains = [from_(n, frozenset() if acyclic else frozenset({n})) for n in sorted(edges)]
    return list(max(chains, key=len, default=()))


def _has_cycle(edges: dict[str, set[str]]) -> bool:
    state: dict[str, int] = {}

    def visit(n: str) -> bool:
        state[n] = 1
        for d in edges.get(n, ()):
            if state.get(d) == 1 or (d not in state and visit(d)):
                return True
        state[n] = 2
        return False

    return any(n not in state and visit(n) for n in sorted(edges))


def layers(edges: dict[str, set[str]]) -> dict[str, int]:
    """Each module's layer: 1 + the highest layer among the modules it imports (top-level imports are acyclic)."""

    @functools.cache
    def layer(name: str) -> int:
        return 1 + max((layer(d) for d in edges.get(name, ())), default=0)

    return {n: layer(n) for n in sorted(edges)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lazy", action="store_true", help="count imports inside functions too")
    parser.add_argument("--packages", action="store_true", help="between packages, not modules")
    parser.add_argument("--layers", action="store_true", help="print each module's layer")
    args = parser.parse_args(argv)
    edges = graph(lazy=args.lazy)
    if args.packages:
        edges = packages(edges)
    chain = longest_chain(edges)
    what = "packages" if args.packages else "modules"
    lazy = "with" if args.lazy else "without"
    print(f"depth {len(chain) - 1}: a chain of {len(chain)} {what} ({lazy} lazy imports; {len(edges)} {what})")
    print("  " + "\n  -> ".join(chain))
    if args.layers and not args.lazy:
        for name, n in sorted(layers(edges).items(), key=lambda kv: (kv[1], kv[0])):
            print(f"{n:3d} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
