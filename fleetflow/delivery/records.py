"""One promotion of one ``main`` commit to one environment, as recorded in git and on the forge.

Where each field comes from (docs/status-page.md): the pin commit on the environment branch (``commit``, ``hold``,
``rollback``), the ``main`` commit itself (``subject``, ``author``, ``landed_at``: its committer date), the
``fleetflow/<env>`` statuses on the ``main`` commit (``pinned_at``: the ``pending`` "scheduled" post that opens
the promotion; ``decided_at`` and ``outcome``: the gate's first ``success`` or ``failure`` after it;
``restored_at``: a later success after a failure), and the first commit of the GitOps branch that carries
``main@commit`` after the pin (``gitops_commit``, ``merged_at``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

Outcome = Literal["success", "failure", "pending", "superseded"]


class Record(BaseModel):
    """Base of the delivery models: frozen, JSON in camelCase (``model_dump(by_alias=True, mode="json")``)."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)


class Promotion(Record):
    environment: str
    commit: str  # the main commit
    subject: str = ""
    author: str = ""
    landed_at: datetime  # when the commit landed on main (its committer date)
    pin_commit: str = ""  # the commit on the environment branch that pinned it
    pinned_at: datetime | None = None
    merged_at: datetime | None = None
    gitops_commit: str | None = None
    decided_at: datetime | None = None
    outcome: Outcome = "pending"
    restored_at: datetime | None = None  # a success the gate recorded after its failure, for the same pin
    description: str = ""  # the gate's last word on it
    rollback: bool = False  # pinned an older commit than the one before (the environment was held there)
    hold: str | None = None

    @property
    def succeeded_at(self) -> datetime | None:
        """When the gate said success for this pin (first time), if it did."""
        return self.decided_at if self.outcome == "success" else self.restored_at

    @property
    def failed(self) -> bool:
        """A change failure: the gate said no, or the promotion was a rollback."""
        return self.outcome == "failure" or self.rollback
