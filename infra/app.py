"""CDK app entry point (`cdk.json` runs `python -m infra.app`).

Configuration comes from CDK context (`cdk deploy -c clusters=prod -c alarmEmail=ops@example.com`); invalid
values stop the synth with a message naming the key. cdk-nag's AwsSolutions checks run on every synth.
"""

from __future__ import annotations

import os
import sys

import aws_cdk as cdk
import cdk_nag

from infra.config import CONTEXT_KEYS, ConfigError, check_no_unknown_keys, config_from_context
from infra.stack import STACK_NAME, DrainOrchestratorStack


def build_app(app: cdk.App) -> DrainOrchestratorStack:
    check_no_unknown_keys(app.node.get_all_context())
    config = config_from_context(app.node.try_get_context)
    account = os.environ.get("CDK_DEFAULT_ACCOUNT")
    region = os.environ.get("CDK_DEFAULT_REGION")
    env = cdk.Environment(account=account, region=region) if account and region else None
    stack = DrainOrchestratorStack(app, STACK_NAME, config=config, env=env)
    cdk.Validations.of(app).add_plugins(cdk_nag.AwsSolutionsChecks(app))
    return stack


def main() -> int:
    app = cdk.App()
    try:
        build_app(app)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        print(f"known context keys: {', '.join(CONTEXT_KEYS)}; see docs/deploy.md", file=sys.stderr)
        return 1
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
