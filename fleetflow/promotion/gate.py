"""The rollout gate, pure: expected clusters + reported statuses + policy + clock → a decision.

Rules (DESIGN.md §5): the expected set comes from the ``Cluster`` inventory (each cluster's exact
``statusContext``, or the policy's ``contextPattern`` filled with the cluster's name) or, without an inventory,
from ``minClusters`` contexts matching ``contextPattern``; any ``failure``/``error`` fails fast; a missing status
is pending, never success; all expected clusters successful for ``soakTime`` → success; still pending after
``timeout`` → failure; zero expected clusters is a configuration error unless ``allowEmpty``.

Which report counts (``newest_reports``): the gate reads every commit of the GitOps branch from the one that
merged the rollout to the tip, along the first-parent line (the commits that were the branch's tip, the only ones a
cluster applies). For each context the **newest report** wins: the one on the latest of those commits (a cluster
that applied a later commit applied this rollout with it, and reports there, as Flux and Argo CD post on the
revision they applied); within one commit, the forge's latest for that context (GitHub: the newest status), and
between a commit status and a check run of the same name on one commit the later one (a tie: the worse state).
Timestamps never reorder commits: a cluster's report on an older commit, however late it was posted, is older
news than its report on a newer one.

``estimate`` decides from counts alone (GitHub's combined ``state`` and ``total_count`` of each commit) when
they suffice, so that a gate waiting for 30,000 clusters costs a few requests, not every page.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from fleetflow.errors import InputError, Problem, Problems, closest
from fleetflow.forge.base import STATUS_DESCRIPTION_LIMIT, CombinedState, CommitStatus, context_key, newer_report
from fleetflow.model.durations import format_duration
from fleetflow.model.resources import RolloutPolicy
from fleetflow.render.incremental import ExpectedCluster

GateState = Literal["pending", "success", "failure"]

@dataclass(frozen=True)
class Reporter:
    """One status context the gate waits for."""

    cluster: str
    context: str


@dataclass(frozen=True)
class Stray:
    """A context on the rollout's commits that the gate does not watch, close to the context of an expected cluster
    that has no report: most likely that cluster, posting under another name than its ``statusContext``."""

    cluster: str  # the expected cluster without a report
    expected: str  # the context the gate waits for
    context: str  # the context that reported
    state: str
    how: str  # how the two differ

    def __str__(self) -> str:
        return f"{self.context!r} reported {self.state}, not {self.cluster}'s {self.expected!r} ({self.how})"


@dataclass
class GateDecision:
    state: GateState
    description: str
    expected: int
    succeeded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    ready_at: datetime | None = None
    counted: bool = True  # False: decided from counts alone (succeeded/failed/missing are not listed)
    # counted: how many more expected contexts must report at least before it can succeed (those with no report
    # at all, up to the number required); a pending report turning green adds no context
    new_reports_needed: int | None = None
    # counted: contexts no expected cluster posts, each close to the context of one that has no report (``strays``)
    strays: list[Stray] = field(default_factory=list)
    # at a timeout: missing clusters that reported on a commit the gate does not read (check_rollout fills it)
    elsewhere: list[str] = field(default_factory=list)

    @property
    def waits_for_reports(self) -> bool:
        """Pending because expected clusters have not all reported (not soaking: no time it may be ready at)."""
        return self.state == "pending" and self.ready_at is None

    def status_description(self) -> str:
        text = self.description
        return text if len(text) <= STATUS_DESCRIPTION_LIMIT else text[: STATUS_DESCRIPTION_LIMIT - 1] + "…"


def reporters(policy: RolloutPolicy, clusters: Sequence[ExpectedCluster], problems: Problems) -> list[Reporter]:
    """The contexts to wait for, from the inventory. Clusters with neither a statusContext nor a contextPattern
    to derive one from are configuration problems."""
    found: list[Reporter] = []
    first: dict[str, tuple[ExpectedCluster, str]] = {}  # context_key -> the first cluster expecting it, its context
    pattern = policy.context_pattern
    needs_pattern = any(not c.status_context for c in clusters) or (not clusters and policy.min_clusters)
    unusable = _pattern_problem(pattern, bool(clusters)) if pattern and needs_pattern else None
    if unusable is not None:
        problems.add(unusable[0], None, unusable[1])
    for cluster in clusters:
        if cluster.status_context:
            why = _status_context_problem(cluster.status_context)
            if why is not None:
                problems.add(f"Cluster {cluster.name} has the statusContext {cluster.status_context!r}: {why[0]}",
                             None, why[1])
                continue
            found.append(Reporter(cluster.name, cluster.status_context))
        elif unusable is not None:
            continue  # said once, at the pattern
        elif policy.context_pattern and "*" not in policy.context_pattern:
            context = policy.context_pattern.replace("{cluster}", cluster.name).replace(
                "{clusterType}", cluster.cluster_type
            )
            found.append(Reporter(cluster.name, context))
        else:
            problems.add(
                f"Cluster {cluster.name} has no statusContext",
                None,
                "set spec.statusContext on the Cluster, or rollout.contextPattern (e.g. flux/{cluster}) "
                "on the Environment",
            )
            continue
        context = found[-1].context
        before, theirs = first.setdefault(context_key(context), (cluster, context))
        if before is not cluster:  # one report would stand for both: the gate could never count them all
            _shared_context(policy, before, cluster, context, theirs, problems)
    if len(found) == len(clusters):  # every cluster has its context: the count can be checked against them
        _count_problems(policy, len(found), problems)
    return found


def _shared_context(policy: RolloutPolicy, before: ExpectedCluster, cluster: ExpectedCluster, context: str,
                    theirs: str, problems: Problems) -> None:
    """Two clusters expecting one status context. The gate counts a context once (a forge keeps the newest status
    of each context on a commit), so it waited for two reports where one can come, and every rollout timed out
    ("missing: 1 more") until 2026-11-29: a Cluster copied without its statusContext changed, or a contextPattern
    without ``{cluster}`` over a cluster type of several clusters."""
    own = cluster.status_context and before.status_context
    how = "its statusContext" if cluster.status_context else f"rollout.contextPattern {policy.context_pattern!r}"
    same = "" if theirs == context else f" ({theirs!r}: GitHub tells contexts apart without case)"
    problems.add(
        f"Cluster {cluster.name} expects the status context {context!r} ({how}), as Cluster {before.name} "
        f"does{same}: the gate counts a context once, so it would wait for a report that cannot come and time out",
        None,
        "give each Cluster the context its own agent posts (Flux: kind/name/<first segment of its Provider's UID>, "
        "or its commitStatusExpr; Argo CD: the notification's status.label), or remove a Cluster listed twice"
        if own else
        "give each cluster its own context: statusContext on the Cluster, or {cluster} in rollout.contextPattern "
        "(e.g. flux/{cluster})",
    )


def _count_problems(policy: RolloutPolicy, expected: int, problems: Problems) -> None:
    """A ``minClusters`` the gate can never reach. It succeeds once at least ``minClusters`` watched contexts
    succeeded, and more than zero are required (``evaluate``); with an inventory only the inventory's contexts are
    watched. Until 2026-11-29 both were accepted and every rollout timed out: ``minClusters: 0`` without
    ``allowEmpty`` ended "timed out after 30m: 2/2 clusters; missing: -2 more", and ``minClusters`` above the
    inventory's count "missing: 1 more"."""
    wanted = policy.min_clusters
    if wanted == 0 and not policy.allow_empty:
        problems.add(
            "rollout.minClusters is 0 without allowEmpty: the gate never takes zero successful reports for a "
            "rollout, so every rollout would wait and time out",
            None,
            "remove minClusters to wait for every expected cluster, set it to 1 or more, or add allowEmpty: true "
            "to let the gate pass without any report",
        )
    elif wanted is not None and expected and wanted > expected:
        problems.add(
            f"rollout.minClusters is {wanted}, but the gate expects {expected} cluster{'s' if expected != 1 else ''} "
            "(the Clusters of the cluster types this environment schedules): with an inventory only their contexts "
            "count, so the gate could never succeed and every rollout would time out",
            None,
            f"lower minClusters to {expected} or less, remove it to wait for every expected cluster, or add the "
            "missing Clusters to the environment branch",
        )


def configuration_problems(policy: RolloutPolicy, clusters: Sequence[ExpectedCluster]) -> list[Problem]:
    """What makes the gate unable to decide, known before any rollout: clusters it cannot tell the context of,
    and an empty expected set (no ``Cluster`` runs an assigned cluster type) without ``minClusters`` or
    ``allowEmpty``. ``validate`` reports these up front; ``evaluate`` refuses with them."""
    found = Problems()
    expected = reporters(policy, clusters, found)
    if found:
        return list(found)
    if not expected and policy.min_clusters is None and not policy.allow_empty:
        return [_ZERO_CLUSTERS]
    return []


def configuration_warnings(policy: RolloutPolicy, clusters: Sequence[ExpectedCluster]) -> list[Problem]:
    """What lets the gate decide, but probably not as meant: ``minClusters: 0`` with ``allowEmpty`` over an
    inventory (``evaluate`` passes at once, "no clusters required", without reading a report), and ``minClusters``
    without an inventory nor a ``contextPattern`` (every context on the GitOps commits counts, ``*``: a CI check
    run or another tool's status is counted as a cluster, and its failure fails the gate)."""
    found = Problems()
    if policy.min_clusters == 0 and policy.allow_empty and clusters:
        count = len(clusters)
        found.add(
            f"rollout.minClusters is 0 with allowEmpty: the gate passes as soon as a rollout is merged, without "
            f"waiting for any of the {count} expected cluster{'s' if count != 1 else ''}",
            None,
            "remove minClusters to wait for every expected cluster (allowEmpty then only lets an environment with "
            "none pass), or set it to how many must succeed",
        )
    if policy.min_clusters and not clusters and policy.context_pattern in (None, "*"):
        how = "rollout.contextPattern is '*'" if policy.context_pattern else "no rollout.contextPattern"
        found.add(
            f"rollout.minClusters counts every status context on the GitOps commits ({how}): a CI check or another "
            "tool's status counts as a cluster, and its failure fails the gate",
            None,
            "set rollout.contextPattern to the contexts the clusters post (e.g. flux/*), or list the Clusters "
            "with their statusContext on the environment branch",
        )
    return list(found)


# the kinds a Flux Alert takes as event sources (notification-controller api/v1/reference_types.go, CrossNamespace
# ObjectReference's Enum): the first part of the context Flux's github provider posts by default
FLUX_EVENT_KINDS = ("Bucket", "GitRepository", "Kustomization", "HelmRelease", "HelmChart", "HelmRepository",
                    "ImageRepository", "ImagePolicy", "ImageUpdateAutomation", "OCIRepository", "ArtifactGenerator",
                    "ExternalArtifact")
_FLUX_DEFAULT_CONTEXT = re.compile(rf"(?i:{'|'.join(FLUX_EVENT_KINDS)})/[^/]+/[0-9A-Fa-f]{{8}}")


# a Kubernetes UID (RFC 4122, 8-4-4-4-12 hex) written whole where Flux's default context has only its first segment:
# fluxcd/notification-controller internal/notifier/util.go, generateCommitStatusID (the github provider's context,
# internal/notifier/github.go): strings.Split(providerUID, "-"), then kind/name/uidParts[0], lowercased
_FLUX_WHOLE_UID = re.compile(rf"((?i:{'|'.join(FLUX_EVENT_KINDS)})/[^/]+/[0-9A-Fa-f]{{8}})"
                             r"(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}")
# a placeholder left as written: {cluster} (contextPattern's), {{.app.metadata.name}} (an Argo CD template), ${X}
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\$\{[^{}]*\}|\{[^{}]*\}")
_FILLED = ("{cluster}", "{clusterType}")


def _status_context_problem(context: str) -> tuple[str, str] | None:
    """(what is wrong, hint) when no reporter can post ``context`` as written, else None. A statusContext is
    compared as written: the gate waited for ``flux/{cluster}`` or a whole Provider UID until its timeout, on every
    rollout, and validate said ok (until 2026-11-29)."""
    if whole := _FLUX_WHOLE_UID.fullmatch(context):
        return ("it ends in a whole Provider UID, but Flux posts only its first segment: the gate would wait for a "
                "context no cluster posts and time out",
                f"write statusContext: {whole.group(1).lower()} (Flux's context is kind/name/<the UID up to its "
                "first '-'>, lowercased)")
    if context.casefold().startswith("fleetflow/"):
        # docs/reporting-status.md: "clusters must not use that prefix"; unchecked until 2026-11-29
        return ("fleetflow/ starts fleetflow's own records, and the workflows take a status under it for one of "
                "them (fleetflow/promotion/events.py): the cluster's reports would never start a gate check, only "
                "the scheduled tick would count them",
                "give the cluster a context of its own, such as flux/<cluster name>, in its reporter and here")
    placeholder = _PLACEHOLDER.search(context)
    if placeholder or "*" in context:
        what = placeholder.group() if placeholder else "*"
        return (f"it holds {what}, which the gate takes as written (a statusContext is the exact context the cluster "
                "posts): it would wait for a context no cluster posts and time out",
                "write the context this cluster's reporter posts (e.g. flux/cloud-eu-1), or leave statusContext out "
                "and set rollout.contextPattern with {cluster} where the cluster's name goes (flux/{cluster})")
    return None


def _pattern_problem(pattern: str, inventory: bool) -> tuple[str, str] | None:
    """(message, hint) when ``rollout.contextPattern`` cannot match what reporters post, else None. With an
    inventory it is filled per cluster (``{cluster}``, ``{clusterType}``) and compared exactly; without one it is a
    glob (``fnmatch``: ``*``, ``?``, ``[...]``) over the reported contexts. Until 2026-11-29 a regex
    (``^flux/{cluster}$``, ``flux/.*``), a template's braces (``flux/{{cluster}}``) or ``{cluster}`` with no
    Cluster to fill it passed validate, and the gate waited for contexts no cluster posts until its timeout; a
    ``*`` over Clusters was reported as each Cluster having no statusContext, hinting to set the pattern it had."""
    if pattern.startswith("^") or pattern.endswith("$") or any(r in pattern for r in (".*", ".+", "\\")):
        glob = pattern.strip("^$").replace(".*", "*").replace(".+", "*").replace("\\", "")
        if pattern.startswith("^") and not pattern.endswith("$") and not glob.endswith("*"):
            glob += "*"  # ^flux/ finds every context that starts so
        example = glob.replace("*", "{cluster}") if inventory else glob
        return (f"rollout.contextPattern {pattern!r} is written as a regular expression, but the gate takes it "
                + ("filled with each cluster's name and compared exactly" if inventory else "as a glob")
                + ": it would wait for contexts no cluster posts and time out",
                f"write it as {'the context with {cluster} for the name' if inventory else 'a glob'}: {example}")
    leftover = next((m for m in _PLACEHOLDER.finditer(pattern) if not (inventory and m.group() in _FILLED)), None)
    if leftover:
        fills = "the gate fills only {cluster} and {clusterType}, in single braces" if inventory else (
            "no Cluster is listed to fill it in: the pattern is a glob over the reported contexts")
        return (f"rollout.contextPattern {pattern!r} holds {leftover.group()}, which stays as written ({fills}): "
                "the gate would wait for contexts no cluster posts and time out",
                f"write {{cluster}} for the cluster's name: {pattern.replace(leftover.group(), '{cluster}')}"
                if inventory else
                "list the Clusters (with statusContext) on the environment branch, or write the pattern as a glob "
                f"over the contexts: {pattern.replace(leftover.group(), '*')}")
    if inventory and "*" in pattern:
        return (f"rollout.contextPattern {pattern!r} holds *, which the gate does not fill: with Clusters listed, "
                "each one's context is the pattern with its name in place of {cluster} (a glob counts contexts only "
                "with minClusters and no Cluster listed)",
                f"write {pattern.replace('*', '{cluster}', 1)}, or give each Cluster its statusContext")
    return None


STRAY_PAIRS = 10_000  # at most this many (missing cluster, unwatched context) pairs are compared by similarity


def _squashed(context: str) -> str:
    return "".join(context.split()).casefold()


def _short_names(context: str) -> str:
    """Each ``/`` segment up to its first dot: ``argocd/k3s-1.contoso.internal`` → ``argocd/k3s-1``."""
    return "/".join(part.split(".", 1)[0] for part in _squashed(context).split("/"))


def _spelling(expected: str, context: str) -> str:
    """How two contexts differ that differ only in spaces and case (case alone is no difference: ``context_key``)."""
    if "".join(expected.split()) == "".join(context.split()):
        return "only spaces differ"
    return "only the case and spaces differ"


def find_strays(missing: Mapping[str, str], unwatched: Mapping[str, CommitStatus]) -> list[Stray]:
    """Which unwatched context is most likely which missing cluster (``missing``: expected context → cluster, of
    the expected clusters with no report at all), each context given to one cluster at most. In this order: the
    same but for spaces (GitHub keeps a context as posted: a CEL expression or a template that adds a space makes
    another context);
    the same up to dots in a segment (``argocd/k3s-1.contoso.internal`` for ``argocd/k3s-1``: a label built from
    the cluster's domain name); Flux's default context (``kind/name/<first segment of the Provider's UID>``) with
    another UID, when only one cluster and one context have that kind and name (a Provider deleted and created
    again has a new UID); else a close spelling (``errors.closest``, cutoff 0.8), compared only when there are at
    most ``STRAY_PAIRS`` pairs, so that a fleet whose contexts all changed costs no quadratic work."""
    found: list[Stray] = []
    left = dict(sorted(unwatched.items()))
    todo = dict(sorted(missing.items()))

    def pair(expected: str, context: str, how: str) -> None:
        found.append(Stray(todo.pop(expected), expected, context, left.pop(context).state, how))

    for key, how in ((_squashed, None), (_short_names, "the name with and without its domain")):
        index: dict[str, str] = {}
        for context in left:
            index.setdefault(key(context), context)
        for expected in list(todo):
            context = index.get(key(expected), "")
            if context in left and context != expected:
                pair(expected, context, how or _spelling(expected, context))
    flux: dict[str, tuple[list[str], list[str]]] = {}  # kind/name -> (expected contexts, unwatched ones)
    for side, contexts in enumerate((list(todo), list(left))):
        for context in contexts:
            if _FLUX_DEFAULT_CONTEXT.fullmatch(context):
                flux.setdefault(context_key(context).rsplit("/", 1)[0], ([], []))[side].append(context)
    for mine, theirs in flux.values():
        if len(mine) == 1 and len(theirs) == 1:
            pair(mine[0], theirs[0], "Flux's default context with another Provider UID: was the Provider recreated?")
    if todo and left and len(todo) * len(left) <= STRAY_PAIRS:
        for expected in list(todo):
            near = closest(expected, left, cutoff=0.8) if left else None
            if near is not None:
                pair(expected, near, "a close name: a typo, or a cluster not in the inventory?")
    return sorted(found, key=lambda s: s.cluster)


_ZERO_CLUSTERS = Problem(
    "the gate expects zero clusters: no Cluster of this environment runs an assigned cluster type",
    None,
    "add Cluster resources (with statusContext) to the environment branch, set rollout.minClusters, "
    "or set rollout.allowEmpty: true",
)


def newest_reports(commits: Sequence[Sequence[CommitStatus]]) -> dict[str, CommitStatus]:
    """The report that counts per context. ``commits``: newest commit first, each with its reports (latest per
    context, commit statuses and check runs). The newest commit that has a report of a context decides it; on one
    commit, a status and a check run of the same name: ``newer_report``. Keyed by ``context_key``: contexts that
    differ only in case are one context, as on GitHub."""
    newest: dict[str, CommitStatus] = {}
    for reports in commits:
        here: dict[str, CommitStatus] = {}
        for report in reports:
            key = context_key(report.context)
            other = here.get(key)
            if other is None or newer_report(report, other):
                here[key] = report
        for context, report in here.items():
            newest.setdefault(context, report)
    return newest


@dataclass(frozen=True)
class Counts:
    """What the first page of one commit's reports tells without reading the rest: GitHub's combined state of its
    commit statuses, how many contexts carry a status, how many check runs there are, and whether any check run
    read so far is not green (``checks_read``: all of them were read)."""

    state: CombinedState
    statuses: int
    checks: int = 0
    checks_failed: bool = False
    checks_read: bool = True


def reported_count(counts: Sequence[Counts]) -> int:
    """How many contexts carry a status and how many check runs there are, over every commit."""
    return sum(c.statuses + c.checks for c in counts)


def failure_counted(counts: Sequence[Counts]) -> bool:
    """A commit's combined state is ``failure``, or a check run read so far is not green."""
    return any(c.state == "failure" or c.checks_failed for c in counts)


def _required(policy: RolloutPolicy, clusters: Sequence[ExpectedCluster]) -> tuple[int, int] | None:
    """(reports required, clusters expected), or None when the gate is misconfigured (``evaluate`` reports how)."""
    problems = Problems()
    expected = reporters(policy, clusters, problems)
    if problems:
        return None
    required = policy.min_clusters if policy.min_clusters is not None else len(expected)
    return required, max(required, len(expected))


def estimate(policy: RolloutPolicy, clusters: Sequence[ExpectedCluster], counts: Sequence[Counts],
             started: datetime, now: datetime) -> GateDecision | None:
    """A decision from counts alone, or None when the reports must be read one by one. ``counts``: newest commit
    first.

    Nothing may have failed anywhere (no commit's combined state is ``failure``, no check run failed). Then the gate
    is pending (or, past ``timeout``, failed) when fewer contexts reported on all the commits together than the gate
    requires, so not every expected cluster can have succeeded; or when exactly as many reported and the newest
    commit's combined state is ``pending``: its pending context is the newest report of that context, so either it
    is an expected cluster that has not succeeded yet, or it is another context and an expected one is missing; or
    when the soak time has not passed since the rollout started (no success can be due before that).
    Anything else (a failure somewhere, or enough reports to possibly be complete) needs the reports themselves."""
    needs = _required(policy, clusters)
    if needs is None or not counts:
        return None
    required, total = needs
    if required == 0:
        return None
    failure_seen = failure_counted(counts) or not all(c.checks_read for c in counts)
    reported = reported_count(counts)
    if failure_seen:
        return None
    if reported > required or (reported == required and counts[0].state != "pending"):
        if now - started < min(policy.soak_time, policy.timeout):
            # every cluster may have succeeded, but no success is due before the soak time has passed since the
            # rollout started (it runs from the newest success, which is not older than the start): pending
            ready = started + policy.soak_time
            return GateDecision("pending", f"soaking: nothing failed; ready at {ready:%Y-%m-%d %H:%M:%S} UTC at the "
                                "earliest", required, ready_at=ready, counted=False)
        return None
    if now - started >= policy.timeout:
        waited = format_duration(policy.timeout)
        return GateDecision("failure", f"timed out after {waited}: at most {reported}/{total} clusters reported",
                            required, counted=False)
    return GateDecision("pending", f"rolling out: waiting for {total} clusters", required, counted=False)


def evaluate(
    policy: RolloutPolicy,
    clusters: Sequence[ExpectedCluster],
    statuses: Mapping[str, CommitStatus],
    started: datetime,
    now: datetime,
) -> GateDecision:
    """Decide the gate over ``statuses`` (the newest report per context, ``newest_reports``). Raises InputError when
    the gate is misconfigured (with every problem)."""
    soak, timeout = policy.soak_time, policy.timeout
    keyed = {context_key(c): s for c, s in statuses.items()}
    statuses = keyed if len(keyed) == len(statuses) else newest_reports([list(statuses.values())])
    problems = Problems()
    expected = reporters(policy, clusters, problems)
    problems.raise_if_any()
    if not expected and policy.min_clusters is None:
        if policy.allow_empty:
            return GateDecision("success", "rolled out: no clusters expected (allowEmpty)", 0)
        raise InputError(_ZERO_CLUSTERS)
    if expected:
        watched = {context_key(r.context): r.cluster for r in expected}
    else:  # no inventory: every context matching the pattern counts (as posted, in the messages)
        pattern = context_key(policy.context_pattern or "*")
        watched = {c: s.context for c, s in statuses.items() if fnmatch.fnmatchcase(c, pattern)}
    required = policy.min_clusters if policy.min_clusters is not None else len(expected)
    if required == 0 and policy.allow_empty:
        return GateDecision("success", "rolled out: no clusters required (allowEmpty)", 0)
    decision = GateDecision("pending", "", required)
    last_success: datetime | None = None
    for context, cluster in sorted(watched.items()):
        status = statuses.get(context)
        if status is None or status.state == "pending":
            decision.missing.append(cluster)
        elif status.state == "success":
            decision.succeeded.append(cluster)
            if status.updated_at is not None and (last_success is None or status.updated_at > last_success):
                last_success = status.updated_at
        else:
            # one line: a reporter's description may hold newlines (Argo CD keeps them), and a line of a log that
            # starts with "::" is a workflow command on GitHub Actions
            text = " ".join(status.description.split())
            detail = f" ({text})" if text else ""
            decision.failed.append(f"{cluster}{detail}")
    total = max(required, len(watched)) if expected else required
    count = f"{len(decision.succeeded)}/{total} clusters"
    decision.new_reports_needed = max(0, required - sum(1 for c in watched if c in statuses))
    if decision.failed:
        decision.state = "failure"
        decision.description = f"failed: {count}; failing: {', '.join(decision.failed)}"
        return decision
    if len(decision.succeeded) >= required and required > 0:
        ready = (last_success or started) + soak
        if now >= ready:
            decision.state = "success"
            decision.description = f"rolled out: {count}"
            return decision
        decision.ready_at = ready
        decision.description = f"soaking: {count}, ready at {ready:%Y-%m-%d %H:%M:%S} UTC"
        return decision
    if expected:
        unreported = {r.context: r.cluster for r in expected if context_key(r.context) not in statuses}
        if unreported:
            decision.strays = find_strays(unreported, {s.context: s for c, s in statuses.items()
                                                       if c not in watched and not c.startswith("fleetflow/")})
    strays = "".join(f"; {stray}" for stray in decision.strays)
    if now - started >= timeout:
        decision.state = "failure"
        missing = ", ".join(decision.missing) or f"{required - len(decision.succeeded)} more"
        decision.description = f"timed out after {format_duration(timeout)}: {count}; missing: {missing}{strays}"
        return decision
    decision.description = f"rolling out: {count}{strays}"
    return decision
