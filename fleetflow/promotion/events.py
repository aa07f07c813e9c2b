"""What a GitHub event means for fleetflow (pure: event name + payload in, a route out).

The workflows ask this instead of trusting ``on:`` filters alone (which ``act`` ignores, and which cannot see
inside a payload). Control-plane repo events:

* ``push`` to ``main`` → promote that commit to the first environments;
* ``push`` to an environment branch → schedule that environment (at its pinned commit);
* ``repository_dispatch`` of type ``fleetflow-promote`` → promote ``client_payload.environment`` /
  ``client_payload.commit`` (``promote`` re-checks the upstream record itself: the payload is only a hint);
* ``workflow_dispatch`` with inputs ``environment``, ``commit``, ``release`` → manual promotion or rollback.

GitOps repo events:

* ``status`` on a commit of an environment branch (not fleetflow's own contexts) → check-rollout; when the
  payload lists the most branches it ever lists (:data:`STATUS_BRANCHES_LISTED`) and none is an environment branch,
  the list may have been cut: check-rollout of every environment;
* ``status`` ``success`` on a ``fleetflow/<env>`` PR head → schedule (merges the PR when ``autoMerge`` is on);
* ``pull_request`` closed and merged from a ``fleetflow/<env>`` head of the same repository (a fork's branch of that
  name is not fleetflow's) → check-rollout of that environment;
* ``schedule`` → check-rollout of every environment (the fallback when an event was missed).

A payload is untrusted data: a payload that is not a JSON object is an :class:`InputError`; a field of the wrong
type (a list where an object belongs) counts as absent, which gives ``none`` or an invalid request, never a
traceback. A manual request's ``environment`` and ``commit`` must be strings; the environment is taken exactly as
given (``" qa "`` or ``Qa`` is refused with a hint, not trimmed or folded: the control-plane workflow names its
approval environment after the input as typed, so a trimmed name would promote past another environment's
protection rules).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field

from fleetflow.errors import InputError, Problem, meant
from fleetflow.results import Result

Action = Literal["promote", "schedule", "check-rollout", "none"]
PROMOTE_EVENT = "fleetflow-promote"
SHA = re.compile(r"^[0-9a-f]{7,40}$")
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
# "The array includes a maximum of 10 branches" ("Webhook events and payloads", status): a commit on more branches
# may be on an environment branch the payload does not name
STATUS_BRANCHES_LISTED = 10


class Route(Result):
    """``fleetflow route``'s result: what the event means."""

    model_config = ConfigDict(frozen=True)

    action: Action
    environments: list[str] = Field(default_factory=list)  # empty with promote: every first environment
    commit: str = ""
    release: bool = False
    reason: str = ""
    invalid: bool = False  # the event asked for something impossible (a bad manual input): an error, not a no-op
    hint: str = Field(default="", exclude=True)  # how to fix an invalid request (the problem's hint)


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
            if payload.get("forced") is True:
                why += (" if it is newer than their pins (a forced push: reconcile never moves an environment back; "
                        "an older commit is promoted by hand with fleetflow promote)")
            return Route(action="promote", environments=[], commit=after, reason=why)
        if branch in branches:
            env = branches[branch]
            return Route(action="schedule", environments=[env],
                         reason=f"push to environment branch {branch}: re-schedule {env}")
        return _none(f"push to {branch}: neither {main_branch} nor an environment branch")
    if event_name == "repository_dispatch":
        if payload.get("action") != PROMOTE_EVENT:
            return _none(f"repository_dispatch {payload.get('action')!r} is not {PROMOTE_EVENT}")
        data = payload.get("client_payload")
        if not isinstance(data, Mapping):
            what = f"is {_type_name(data)}" if "client_payload" in payload else "is missing"
            return _invalid(
                f"repository_dispatch {PROMOTE_EVENT}: client_payload {what}, not an object with environment and "
                "commit",
                f'send {{"event_type": "{PROMOTE_EVENT}", "client_payload": {{"environment": "<name>", "commit": '
                '"<sha>"}} to POST /repos/{owner}/{repo}/dispatches')
        return _promote_request(data, environments, "repository_dispatch", "client_payload.")
    if event_name == "workflow_dispatch":
        inputs = _object(payload.get("inputs"))
        return _promote_request(inputs, environments, "workflow_dispatch", "input ")
    if event_name == "status":
        context = str(payload.get("context", ""))
        if context.startswith("fleetflow/"):
            return _none(f"status {context} is fleetflow's own record")
        listed = _items(payload.get("branches"))
        names = [str(b.get("name", "")) for b in listed if isinstance(b, Mapping)]
        envs = sorted({n for n in names if n in environments})
        heads = sorted({n.removeprefix("fleetflow/") for n in names if n.removeprefix("fleetflow/") in environments
                        and n.startswith("fleetflow/")})
        if not envs and heads and payload.get("state") == "success":
            # a check on a fleetflow PR went green: re-schedule, which merges it when autoMerge is on
            return Route(action="schedule", environments=heads,
                         reason=f"status {context} = success on fleetflow/{heads[0]}")
        if not envs and len(listed) >= STATUS_BRANCHES_LISTED:
            return Route(action="check-rollout", environments=sorted(environments),
                         reason=f"status {context} = {payload.get('state')} on a commit of {len(listed)} or more "
                         "branches (GitHub lists at most 10): maybe on an environment branch, check them all")
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
        head_repo = _object(_object(pr.get("head")).get("repo")).get("full_name")
        base_repo = _object(_object(pr.get("base")).get("repo")).get("full_name")
        if not head_repo or head_repo != base_repo:
            # a fork may name a branch fleetflow/<env>; fleetflow pushes its head branches to the GitOps repo itself
            return _none(f"merged PR {head} -> {base} comes from {head_repo or 'a deleted repository'}, not "
                         f"{base_repo}: not a fleetflow promotion")
        return Route(action="check-rollout", environments=[base], reason=f"PR #{pr.get('number')} merged into {base}")
    if event_name == "schedule":
        return Route(action="check-rollout", environments=sorted(environments),
                     reason="scheduled check of every environment")
    return _none(f"event {event_name} is not one fleetflow acts on")


def _invalid(reason: str, hint: str) -> Route:
    return Route(action="none", reason=reason, invalid=True, hint=hint)


def _promote_request(fields: Mapping[str, Any], environments: Sequence[str], source: str, prefix: str) -> Route:
    """``fields``: the dispatch's ``client_payload`` or the manual run's ``inputs``; ``prefix`` names a field the
    way the person who sent it knows it (``client_payload.commit``, ``input commit``)."""
    environment, commit, release = fields.get("environment"), fields.get("commit"), fields.get("release")
    known = ", ".join(sorted(environments))
    for key, value in (("environment", environment), ("commit", commit)):
        if value is not None and not isinstance(value, str):
            return _invalid(f"{source}: {prefix}{key} is {_type_name(value)}, not a string",
                            f"give {prefix}{key} as a string" + (" of the commit's sha" if key == "commit" else ""))
    env = environment or ""
    if env and env not in environments:
        near = meant(env.strip(), environments)
        return _invalid(f"{source}: unknown environment {env!r} (known: {known})",
                        f"did you mean {near!r}? Give {prefix}environment exactly as the Environment is named"
                        if near else f"give {prefix}environment as one of: {known}; empty for the first environments")
    sha = (commit or "").strip().lower()
    if not sha:
        given = ", ".join(sorted(str(k) for k in fields))
        return _invalid(f"{source}: {prefix}commit is missing (a sha of main to promote)",
                        f"give {prefix}commit: the main commit's sha (git rev-parse origin/main)"
                        + (f"; given: {given}" if given else ""))
    if not SHA.match(sha):
        return _invalid(f"{source}: commit {sha!r} is not a sha (7 to 40 hex digits)",
                        f"give {prefix}commit as the commit's sha, not a branch or tag name: git rev-parse {sha}"
                        if NAME.match(sha) else f"give {prefix}commit as the commit's sha (7 to 40 hex digits)")
    return Route(action="promote", environments=[env] if env else [], commit=sha, release=_truthy(release),
                 reason=f"{source}: promote {sha[:12]} to {env or 'the first environments'}")
