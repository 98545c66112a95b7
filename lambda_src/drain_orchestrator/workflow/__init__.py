"""The durable drain workflow, along its seams.

- `event_flow`: one EventBridge event -> admit (settings, parse, decide) -> per-instance flows, bounded concurrency.
- `drain_flow` / `launch_flow`: one instance, from plan to verdict (drain) or from launch to Ready (launch).
- `begin`, `verdict`: a drain's first and last parts as one step each, one checkpoint each.
- `drain_steps`, `lifecycle_steps`, `report_step`: the step bodies; they never raise (`step_guard`).
- `results`: typed step results as checkpointed; `job`: what the steps of one instance share.
- `pace`: the flow's clock, heartbeats and retries; `heartbeat`: beats from inside long steps.
- `runtime`: what a Lambda container keeps (validated settings, cached clients); `notify`: best-effort SNS.
"""
