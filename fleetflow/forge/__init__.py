"""The edges to the outside: forges behind one small protocol, and the one git layer.

``base`` is the :class:`~fleetflow.forge.base.Forge` protocol; ``github`` implements it with PyGithub (token or
App, ``githubauth``), ``local`` with plain git repos (``localstore``); ``factory`` picks one from the settings.
``git`` is the git layer (clones, mirrors, commits, compare-and-swap pushes); ``registrations`` reads a
``WorkloadRegistration``'s repo. The rest of fleetflow only uses the protocol and never imports PyGithub. It may
import ``fleetflow.model`` (to parse what it reads), ``fleetflow.errors`` and ``fleetflow.settings``; never
``render``, ``promotion``, ``cli`` or ``demo``.
"""

from fleetflow.forge.base import CommitStatus, Forge, PullRequest

__all__ = ["CommitStatus", "Forge", "PullRequest"]
