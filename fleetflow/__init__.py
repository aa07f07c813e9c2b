"""fleetflow: fleet promotion for GitOps, from a repo and a workflow alone."""

__version__ = "0.1.0"
