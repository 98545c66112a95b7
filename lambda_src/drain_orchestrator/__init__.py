"""EKS Drain Orchestrator: cordon and drain EKS nodes before their EC2 instances go away."""

__version__ = "0.2.0"
