"""The Lambda code asset: built by `infra.bundle` on this machine, never in Docker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

from . import bundle


@jsii.implements(cdk.ILocalBundling)
class CachedLocalBundler:
    """CDK calls `try_bundle` only when the asset hash is not staged yet; returning True means CDK never
    falls back to the Docker image."""

    # jsii passes the BundlingOptions positionally (struct) in some versions, as keywords in others.
    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        bundle.assemble(Path(output_dir))
        return True


def lambda_code() -> lambda_.Code:
    key = bundle.bundle_key()
    return lambda_.Code.from_asset(
        str(bundle.SOURCE_ROOT),
        # The hash covers lock, pyproject, sources and recipe: a synth with unchanged inputs reuses the
        # staged asset, and the CloudFormation template only changes when the code really does.
        asset_hash_type=cdk.AssetHashType.CUSTOM,
        asset_hash=key,
        bundling=cdk.BundlingOptions(
            # Required by the API, never pulled: the local bundler always succeeds or raises.
            image=cdk.DockerImage.from_registry("public.ecr.aws/sam/build-python3.13"),
            local=CachedLocalBundler(),
        ),
    )
