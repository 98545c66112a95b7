"""EKS extension: DescribeCluster answers with the local apiserver's endpoint and CA (moto invents both)."""

from __future__ import annotations

from typing import Any


def install(endpoint: str, ca_b64: str) -> None:
    from moto.eks import models as eks_models

    original_init = eks_models.Cluster.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.endpoint = endpoint
        self.certificate_authority = {"data": ca_b64}

    eks_models.Cluster.__init__ = __init__  # type: ignore[method-assign]
