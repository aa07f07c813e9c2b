"""The demo story followed by two more days of a fleet's life, for the status page and the delivery metrics:

day 1 (the story): main@c1 goes dev → qa → prod; main@c2 fails in qa.
day 2: main@c3 fixes orders-api and goes through the whole chain; later prod is rolled back to c1 by hand (held
there until someone releases it) and rolls c1 out again.
day 3: main@c4 succeeds in dev and fails in qa: a cluster names the failure; prod stays held.

Every commit lands on main at the demo clock's time (``GIT_*_DATE`` set for the git the demo runs), so lead
times are what the story says.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from fleetflow.demo.story import Demo, _git
from fleetflow.promotion.context import Context
from fleetflow.promotion.promote import promote
from fleetflow.promotion.status import EnvironmentStatus, as_text, fleet_status


@contextmanager
def dated(stamp: int) -> Iterator[None]:
    """Git commits made by the demo's own ``git`` calls carry ``stamp`` as author and committer date."""
    keys = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update({k: f"{stamp} +0000" for k in keys})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class HistoryDemo(Demo):
    """:class:`Demo` plus days 2 and 3 (see the module docstring). ``run`` returns the final status."""

    def run(self) -> list[EnvironmentStatus]:
        with dated(int((self.clock.now - timedelta(minutes=20)).timestamp())):
            super().run()
        # a fresh context: the story's closed its scratch folder (and the trees exported there) on the way out
        self.ctx = Context(forge=self.forge, git=self.ctx.git, control_plane=str(self.cp), clock=self.clock,
                           say=self.ctx.say)
        with self.ctx:
            self.clock.advance(timedelta(days=1) - timedelta(hours=self.clock.now.hour - 9))
            self.say("\n== 3. Next day: a fix for orders-api goes through the whole chain")
            c3 = self.land("orders-api: fix the readiness probe", "# readiness probe fixed")
            self.clock.advance(timedelta(minutes=25))
            self.walk(c3, fail_in=None)
            self.clock.advance(timedelta(hours=3))
            first = _git(self.root / "work-control-plane", "rev-list", "--max-parents=0", "HEAD").strip()
            self.say(f"\n== 4. prod is rolled back to main@{first[:12]} by hand (held until released)")
            back = promote(self.ctx, "prod", first)
            self.say(f"   {back.message}")
            self.approve("prod")
            self.report_and_check("prod", fail=False)
            self.clock.advance(timedelta(days=1) - timedelta(hours=5))
            self.say("\n== 5. Another change fails in qa; prod stays held")
            c4 = self.land("orders-api: raise the connection pool", "# pool: 40")
            self.clock.advance(timedelta(minutes=40))
            self.walk(c4, fail_in="qa")
            entries = fleet_status(self.ctx)
            self.say(as_text(entries))
            return entries

    def commit_change(self) -> str:
        with dated(int(self.clock.now.timestamp())):
            return super().commit_change()

    def land(self, message: str, line: str) -> str:
        """A commit on main (a line appended to the orders-api workload) at the clock's time; its sha."""
        work = self.root / "work-control-plane"
        path = work / "workloads" / "orders-api.yaml"
        path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
        with dated(int(self.clock.now.timestamp())):
            _git(work, "commit", "-q", "-am", message)
        _git(work, "push", "-q", str(self.cp), "HEAD:refs/heads/main")
        return _git(work, "rev-parse", "HEAD").strip()
