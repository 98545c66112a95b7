from __future__ import annotations

import pytest

from drain_orchestrator.kube.node_lookup import instance_id_from_provider_id


@pytest.mark.parametrize(
    ("provider_id", "expected"),
    [
        ("aws:///us-east-1a/i-0abc12345", "i-0abc12345"),
        ("aws:////i-0abc12345", "i-0abc12345"),
        ("i-0abc12345", "i-0abc12345"),
        ("aws:///us-east-1a/fargate-10.0.1.2", None),
        ("", None),
        (None, None),
    ],
)
def test_provider_id_parsing(provider_id: str | None, expected: str | None) -> None:
    assert instance_id_from_provider_id(provider_id) == expected
