"""What a GitHub event means for fleetflow (pure: event name + payload in, a route out).

The workflows ask this instead of trusting ``on:`` filters alone (which ``act`` ignores, and which cannot see
inside a payload). Control-plane repo events:

* ``push`` to ``main`` → promote that commit to the first environments;
* ``push`` to an environment branch → schedule that environment (at its pinned commit);
* ``repository_dispatch`` of type ``fleetflow-promote`` → promote ``client_payload.environment`` /
  ``client_payload.commit`` (``promote`` re-checks the upstream record itself: the payload is only a hint);
* ``workflow_dispatch`` with inputs ``environment``, ``commit``, ``release`` → manual promotion or rollback.

GitOps repo events:

* ``status`` on a commit of an environment branch (not fleetflow's own contexts) → check-rollout;
* ``status`` ``success`` on a ``fleetflow/<env>`` PR head → schedule (merges the PR when ``autoMerge`` is on);
* ``pull_request`` closed and merged from a ``fleetflow/<env>`` head → check-rollout of that environment;
* ``schedule`` → check-rollout of every environment (the fallback when an event was missed).

A payload is untrusted data: a payload that is not a JSON object is an :class:`InputError`; a field of the wrong
type (a list where an object belongs) counts as absent, which gives ``none`` or an invalid request, never a
traceback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field

from fleetflow.errors import InputError, Problem
from fleetflow.results import Result

Action = Literal["promote", "schedule", "check-rollout", "none"]
PROMOTE_EVENT = "fleetflow-promote"
SHA = re.compile(r"^[0-9a-f]{7,40}$")
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


class Route(Result):
    """``fleetflow route``'s result: what the event means."""

    model_config = ConfigDict(frozen=True)

    action: Action
    environments: list[str] = Field(default_factory=list)  # empty with promote: every first environment
    commit: str = ""
    release: bool = False
    reason: str = ""
    invalid: bool = False  # the event asked for something impossible (a bad manual input): an error, not a no-op


def _none(reason: str) -> Route:
    return Route(action="none", reason=reason)


def _object(value: object) -> Mapping[str, Any]:
    """A payload field that should be an object; anything else counts as absent."""
    return value if isinstance(value, Mapping) else {}


def _items(value: object) -> list[Any]:
    """A payload field that should be a list; anything else counts as absent."""
    return value if isinstance(value, list) else []


def _type_name(value: object) -> str:
    names = {type(None): "null", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number"}
    return names.get(type(value), type(value).__name__)


def _truthy(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "1"))


def route(
    event_name: str,
    payload: object,
    *,
    environments: Sequence[str],
    env_branches: Mapping[str, str] | None = None,
    main_branch: str = "main",
) -> Route:
    """``environments``: the environment names; ``env_branches``: control-plane branch → environment
    (default: each environment's branch is its name). GitOps branches are taken to be named after environments.
    Raises InputError when ``payload`` is not a JSON object."""
    if not isinstance(payload, Mapping):
        raise InputError([Problem(
            f"the {event_name} event payload is {_type_name(payload)}, not a JSON object",
            None,
            "pass the file GitHub wrote for the event ($GITHUB_EVENT_PATH)",
        )])
    branches = dict(env_branches) if env_branches is not None else {e: e for e in environments}
    if event_name == "push":
        ref = str(payload.get("ref", ""))
        if not ref.startswith("refs/heads/"):
            return _none(f"push to {ref or 'an unknown ref'} is not a branch")
        branch = ref.removeprefix("refs/heads/")
        if payload.get("deleted"):
            return _none(f"branch {branch} was deleted")
        after = str(payload.get("after", ""))
        if branch == main_branch:
            why = f"push to {main_branch}: promote {after[:12]} to the first environments"
            return Route(action="promote", environments=[], commit=after, reason=why)
        if branch in branches:
            env = branches[branch]
            return Route(action="schedule", environments=[env],
                         reason=f"push to environment branch {branch}: re-schedule {env}")
        return _none(f"push to {branch}: neither {main_branch} nor an environment branch")
    if event_name == "repository_dispatch":
        if payload.get("action") != PROMOTE_EVENT:
            return _none(f"repository_dispatch {payload.get('action')!r} is not {PROMOTE_EVENT}")
        data = _object(payload.get("client_payload"))
        return _promote_request(data.get("environment"), data.get("commit"), data.get("release"), environments,
                                "repository_dispatch")
    if event_name == "workflow_dispatch":
        inputs = _object(payload.get("inputs"))
        return _promote_request(inputs.get("environment"), inputs.get("commit"), inputs.get("release"), environments,
                                "workflow_dispatch")
    if event_name == "status":
        context = str(payload.get("context", ""))
        if context.startswith("fleetflow/"):
            return _none(f"status {context} is fleetflow's own record")
        names = [str(b.get("name", "")) for b in _items(payload.get("branches")) if isinstance(b, Mapping)]
        envs = sorted({n for n in names if n in environments})
        heads = sorted({n.removeprefix("fleetflow/") for n in names if n.removeprefix("fleetflow/") in environments
                        and n.startswith("fleetflow/")})
        if not envs and heads and payload.get("state") == "success":
            # a check on a fleetflow PR went green: re-schedule, which merges it when autoMerge is on
            return Route(action="schedule", environments=heads,
                         reason=f"status {context} = success on fleetflow/{heads[0]}")
        if not envs:
            return _none(f"status {context} on {str(payload.get('sha', ''))[:12]}: not on an environment branch")
        return Route(action="check-rollout", environments=envs, reason=f"status {context} = {payload.get('state')}")
    if event_name == "pull_request":
        pr = _object(payload.get("pull_request"))
        head = str(_object(pr.get("head")).get("ref", ""))
        base = str(_object(pr.get("base")).get("ref", ""))
        if payload.get("action") != "closed" or not pr.get("merged"):
            return _none("pull request not merged")
        if head != f"fleetflow/{base}" or base not in environments:
            return _none(f"merged PR {head} -> {base} is not a fleetflow promotion")
        return Route(action="check-rollout", environments=[base], reason=f"PR #{pr.get('number')} merged into {base}")
    if event_name == "schedule":
        return Route(action="check-rollout", environments=sorted(environments),
                     reason="scheduled check of every environment")
    return _none(f"event {event_name} is not one fleetflow acts on")


def _promote_request(environment: object, commit: object, release: object, environments: Sequence[str],
                     source: str) -> Route:
    env = str(environment or "").strip()
    sha = str(commit or "").strip().lower()
    if env and (not NAME.match(env) or env not in environments):
        known = ", ".join(sorted(environments))
        return Route(action="none", reason=f"{source}: unknown environment {env!r} (known: {known})", invalid=True)
    if not SHA.match(sha):
        return Route(action="none", reason=f"{source}: commit {sha!r} is not a sha (7 to 40 hex digits)",
                     invalid=True)
    return Route(action="promote", environments=[env] if env else [], commit=sha, release=_truthy(release),
                 reason=f"{source}: promote {sha[:12]} to {env or 'the first environments'}")
