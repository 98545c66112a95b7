"""The examples of docs/notifications.md, for the tests that hold a published notification against its phase's
example: the same fields, nested ones included."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from testbed.bed import REPO

DOC = REPO / "docs" / "notifications.md"


def documented() -> dict[str, dict[str, Any]]:
    """The examples: a ```json block right after a `<!-- example: NAME -->` line."""
    blocks = re.findall(r"<!-- example: ([\w-]+) -->\n```json\n(.*?)\n```", DOC.read_text(encoding="utf-8"), re.S)
    return {name: json.loads(body) for name, body in blocks}


def paths(value: Any, prefix: str = "") -> Iterator[str]:
    """Every key path of a message: ``gates.volumes.held``; a list of objects as ``name[].field``."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield prefix + key
            yield from paths(inner, f"{prefix}{key}.")
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        yield from paths(value[0], prefix[:-1] + "[].")


def assert_shaped_like_its_example(message: dict[str, Any], without: Iterable[str] = ()) -> None:
    """``message`` has exactly the key paths of the documented example of its phase, less ``without``."""
    example = documented()[message["phase"]]
    expected = sorted(p for p in paths(example) if p not in set(without))
    assert sorted(paths(message)) == expected, (message["phase"], json.dumps(message, indent=2))
