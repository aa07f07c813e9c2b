"""Build the forge the settings name. The only place that knows both implementations."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from fleetflow.clock import utc_now
from fleetflow.forge.base import Forge
from fleetflow.settings import Settings


def make_forge(settings: Settings, clock: Callable[[], datetime] | None = None) -> Forge:
    clock = clock or utc_now
    if settings.forge == "local":
        from fleetflow.forge.local import LocalForge

        return LocalForge(cache_dir=settings.cache_dir / "forge", clock=clock)
    from fleetflow.forge.github import GitHubForge

    return GitHubForge.from_settings(settings)
