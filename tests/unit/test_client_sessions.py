"""Clients of separate sessions read botocore's models through one loader: each session keeps its own credentials,
while a model's JSON is parsed once per process. Building a client sends no request."""

from __future__ import annotations

from pathlib import Path

import pytest

from drain_orchestrator.aws import clients


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("AWS_DATA_PATH", raising=False)


def test_sessions_are_separate_but_share_the_parsed_models() -> None:
    first, second = clients.new_session(), clients.new_session()
    assert first is not second and first._session is not second._session  # credentials and profile: each its own
    loader = first._session.get_component("data_loader")
    assert second._session.get_component("data_loader") is loader
    a, b = clients.ec2_client(), clients.ec2_client()
    # the service model's shape map was parsed once: both clients point at the same loaded data
    assert a.meta.service_model._service_description is b.meta.service_model._service_description


def test_the_shared_loader_keeps_each_search_path_once_however_many_sessions_wrap_it() -> None:
    for _ in range(20):
        clients.new_session()
    paths = clients.new_session()._session.get_component("data_loader").search_paths
    assert len(paths) == len(set(paths))
    assert any(p.endswith("boto3/data") for p in paths)  # boto3's own data directory, appended by each session, once


def test_aws_data_path_adds_its_directories_as_botocore_reads_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    paths = clients.new_session()._session.get_component("data_loader").search_paths
    assert paths[0] == str(tmp_path)
