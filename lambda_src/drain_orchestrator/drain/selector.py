"""Label selectors as a PodDisruptionBudget uses them (pure): which budgets select a pod."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels + matchExpressions); a PDB's empty selector selects every pod, a null one none."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(op, False)
        if not ok:
            return False
    return True


def selecting(pdbs: list[Mapping[str, Any]], namespace: str, labels: Mapping[str, str]) -> list[str]:
    """Names of the budgets of ``namespace`` whose selector selects a pod with ``labels``, sorted."""
    out = []
    for pdb in pdbs:
        meta = pdb.get("metadata") or {}
        if meta.get("namespace", namespace) == namespace and selects((pdb.get("spec") or {}).get("selector"), labels):
            out.append(str(meta.get("name", "")))
    return sorted(out)
