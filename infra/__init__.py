"""CDK app and the reusable `DrainOrchestrator` construct for EKS Drain Orchestrator."""
