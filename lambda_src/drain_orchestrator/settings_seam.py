"""The seam between the function and its CDK construct, at ``cdk synth``.

The construct runs the function's own settings validation on the values it deploys (infra/function_settings.py), so
a bad drain setting fails the synth naming its variable instead of failing every event at cold start. It loads
exactly the modules below from the function's sources, by file and in this order, without the rest of the package
and without any third-party module: each of them imports only the standard library and the modules before it. This
module is the list both sides read; tests/infra/test_settings_seam.py checks both sides against it.
"""

from __future__ import annotations

SYNTH_MODULES = ("clip", "settings", "failures", "pacing", "surge_mode", "workflow_settings")
