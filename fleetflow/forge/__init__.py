"""Forges behind one small protocol: ``github`` (PyGithub) and ``local`` (plain git repos).

The rest of fleetflow only uses :class:`fleetflow.forge.base.Forge`; it never imports PyGithub.
"""

from fleetflow.forge.base import CommitStatus, Forge, PullRequest

__all__ = ["CommitStatus", "Forge", "PullRequest"]
