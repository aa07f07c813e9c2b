"""One environment's schedule in N shards: ``fleetflow schedule --shard K/N`` on N runners, then ``--stitch``.

A **shard job** renders the cluster types of its shard (:func:`shard_of`: a stable hash of the name, so a
cluster type stays in its shard when others come and go) against the GitOps branch, exactly as a single job
would render them, and writes them as git objects: each cluster-type folder is one tree, each state shard one blob.
It saves them in an artifact folder: a git bundle of those objects and a manifest naming, per cluster type it
changed, the folder's tree id and the state shard's blob id (None: gone), plus the assignments it added, removed
and changed.

The **stitch job** reads every shard's manifest and bundle, takes the root tree of the GitOps branch, puts each
changed cluster-type folder and state shard in by id (every other one stays as it is), writes the state index
(which needs the control plane, not the assignments), commits once and then keeps the one PR up to date as a single
job does. The commit is the one a single ``fleetflow schedule`` gives: same tree, message, author and dates.

Pure git objects: nothing is checked out. The bundle holds only objects the GitOps branch does not have.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import Field

from fleetflow.errors import GitError, InputError, Problem, Problems, UsageError, shown_path
from fleetflow.forge.git import BareRepo, TreeEdit, retry_races
from fleetflow.model.durations import format_duration
from fleetflow.promotion.context import (
    Context,
    Pinned,
    pinned_to_render,
    refuse_foreign_state,
    short,
    status_context,
)
from fleetflow.promotion.gitops import (
    GitOpsTree,
    clean_root,
    commit_edits,
    hand_edits,
    unreadable_state,
    write_commit,
)
from fleetflow.promotion.schedule import Rendered, ScheduleOutcome, commit_message, publish
from fleetflow.render.diff import file_diff, review_order
from fleetflow.render.incremental import PART_DIR, SHARD_DIR, STATE_PATH, Assignments, Shard, shard_path
from fleetflow.render.ownership import Ownership
from fleetflow.render.pipeline import Changes, Meta, render_environment
from fleetflow.results import Result

MANIFEST = "shard-{index}-of-{count}.json"
BUNDLE = "shard-{index}-of-{count}.bundle"
SHARDS_WORKFLOW = "fleetflow-schedule-shards"
# How long a sharded schedule is due before reconcile warns: a run of the fleetflow-schedule-shards workflow ends
# within its jobs' time limits (timeout-minutes 5 for the matrix job, 60 for a shard, 30 for the stitch: 95
# minutes), and it starts on the push that makes the schedule due (the example caller's hourly cron tick catches a
# missed one). A failed shard job stops the run at once, with the problem at its line, and nothing renders the
# environment again until a fix is pushed or the workflow is re-run.
SHARDED_OVERDUE = timedelta(hours=2)


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> ShardSpec:
        """``K/N`` with 1 ≤ K ≤ N; a UsageError that says so otherwise."""
        k, slash, n = text.partition("/")
        if not slash or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
            raise UsageError(f"--shard {text!r}: give K/N with 1 <= K <= N, e.g. --shard 2/3")
        return cls(int(k), int(n))

    def owns(self, cluster_type: str) -> bool:
        return shard_of(cluster_type, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(cluster_type: str, count: int) -> int:
    """The shard (1-based) that renders ``cluster_type`` when there are ``count``: a stable hash of the name."""
    return int.from_bytes(hashlib.sha256(cluster_type.encode()).digest()[:8], "big") % count + 1


class ShardManifest(Result):
    """What a shard job rendered: the artifact the stitch job reads (``shard-K-of-N.json`` beside its bundle)."""

    environment: str
    shard: str  # "K/N"
    base_commit: str | None  # the GitOps branch the shard was rendered against
    main_commit: str
    env_commit: str
    rendered: int
    folders: dict[str, str | None]  # cluster type -> tree id of its folder (None: the folder goes)
    states: dict[str, str | None]  # cluster type -> blob id of its state shard (None: the shard goes)
    changes: Changes
    bundle: str | None  # file name of the git bundle beside the manifest (None: nothing changed)
    # files in the folders the shard wrote to that fleetflow did not write: kept (the PR lists them)
    foreign: list[str] = Field(default_factory=list)
    # "<repo URL> branch <branch>" -> the commit of each registered workload repository the shard read (every job
    # fetches the branch itself: a push there between the jobs gives each another input)
    workloads: dict[str, str] = Field(default_factory=dict)


def render_shard(ctx: Context, environment: str, spec: ShardSpec, folder: Path) -> ShardManifest:
    """Render the cluster types of shard ``spec`` against the GitOps branch and save them in ``folder``."""
    at = pinned_to_render(ctx, environment)
    base = at.fetch_gitops(ctx.git, with_head=False)[at.gitops_branch]
    repo = ctx.git.mirror(at.gitops_url)
    tree = GitOpsTree(repo, base, clean_root(at.gitops_path))
    previous = tree.read_state()
    refuse_foreign_state(at, previous)
    edited = hand_edits(tree, previous)  # the stitch finds the same ones, for its PR
    if previous is not None and edited.paths:
        previous.render_again(edited.assignments, edited.reporters)
    ctx.starting(f"{environment}: rendering shard {spec} (main@{short(at.main_sha)} + {at.branch}@{short(at.env_sha)})")
    result = render_environment(at.plane, environment, previous=previous, meta=Meta(at.main_sha, at.env_sha),
                                only=spec.owns)
    written = write_commit(tree, result, previous, f"fleetflow: {environment} shard {spec}", ctx.git.identity, 0)
    folders: dict[str, str | None] = {}
    states: dict[str, str | None] = {}
    if written.commit is not None:
        folders = _changed(_folders(repo, base, tree.root), _folders(repo, written.commit, tree.root), spec.owns)
        states = _changed(_state_shards(repo, base, tree.root), _state_shards(repo, written.commit, tree.root),
                          spec.owns)
    folder.mkdir(parents=True, exist_ok=True)
    bundle = None
    if folders or states:
        assert written.commit is not None
        bundle = BUNDLE.format(index=spec.index, count=spec.count)
        _bundle(repo, written.commit, base, folder / bundle)
    manifest = ShardManifest(
        environment=environment, shard=str(spec), base_commit=base, main_commit=at.main_sha, env_commit=at.env_sha,
        rendered=len(result.rendered), folders=folders, states=states,
        changes=Changes(added=result.changes.added, removed=result.changes.removed, changed=result.changes.changed),
        bundle=bundle, foreign=[shown_path(p) for p in written.owned.foreign], workloads=workload_commits(ctx),
    )
    (folder / MANIFEST.format(index=spec.index, count=spec.count)).write_text(
        json.dumps(manifest.model_dump(by_alias=True), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def workload_commits(ctx: Context) -> dict[str, str]:
    """The commit of each registered workload repository the run read (``<repo URL> branch <branch>`` -> sha)."""
    return {f"{url} branch {branch}": sha for (url, branch), sha in sorted(ctx.workload_commits().items())}


def _folders(repo: BareRepo, commit: str | None, root: str) -> dict[str, str]:
    """Name -> tree id of every folder directly in the output root of ``commit``."""
    if commit is None:
        return {}
    return {e.path.rpartition("/")[2]: e.sha for e in repo.ls_tree(commit, [f"{root}/"] if root else [])
            if e.kind == "tree"}


def _state_shards(repo: BareRepo, commit: str | None, root: str) -> dict[str, str]:
    """Cluster type -> blob id of every state shard in ``commit``."""
    if commit is None:
        return {}
    prefix = f"{root}/{SHARD_DIR}/" if root else f"{SHARD_DIR}/"
    return {e.path.rpartition("/")[2].removesuffix(".json"): e.sha for e in repo.ls_tree(commit, [prefix])
            if e.kind == "blob" and e.path.endswith(".json")}


def _changed(before: dict[str, str], after: dict[str, str], owns: Callable[[str], bool]) -> dict[str, str | None]:
    names = {n for n in before.keys() | after.keys() if owns(n) and not n.startswith(".")}
    return {n: after.get(n) for n in sorted(names) if before.get(n) != after.get(n)}


def _bundle(repo: BareRepo, commit: str, base: str | None, path: Path) -> None:
    """A git bundle of what ``commit`` has and ``base`` has not (through a scratch ref: bundles name refs)."""
    ref = f"refs/fleetflow-shard/{uuid.uuid4().hex}"
    repo.git("update-ref", ref, commit)
    try:
        repo.git("bundle", "create", "--quiet", str(path), ref, *([f"^{base}"] if base else []))
    finally:
        repo.git("update-ref", "-d", ref, check=False)


def read_manifests(folder: Path, environment: str) -> list[tuple[ShardManifest, Path]]:
    """Every shard's manifest of ``environment`` found under ``folder`` (artifact downloads may nest them), checked
    to be one complete set, rendered from one set of inputs, each with its bundle; an InputError saying what to do
    otherwise. Whether those inputs are still the current ones is :func:`moved_inputs`.

    Manifests of other environments are left aside: the shards workflow downloads the artifacts matching
    ``fleetflow-shard-<environment>-*-of-N``, and in a run that schedules environments ``prod`` and ``prod-eu``
    (two jobs of one caller) that pattern matches ``prod-eu``'s too."""
    found: list[tuple[ShardManifest, Path]] = []
    others: dict[str, list[str]] = {}  # environment -> its shards found
    problems: list[Problem] = []
    for path in sorted(folder.rglob("shard-*-of-*.json")):
        try:
            manifest = ShardManifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, OSError) as exc:
            raise InputError([Problem(f"{path} is not a shard manifest ({exc})", None,
                                      "give --stitch the folder the shard jobs wrote (their artifacts)")]) from exc
        try:
            ShardSpec.parse(manifest.shard)
        except UsageError:
            problems.append(Problem(f"{path}: shard {manifest.shard!r} is not K/N with 1 <= K <= N", None,
                                    "give --stitch the manifests the shard jobs wrote, as they wrote them"))
            continue
        if manifest.environment != environment:
            others.setdefault(manifest.environment, []).append(manifest.shard)
            continue
        if manifest.bundle is not None and not (path.parent / manifest.bundle).is_file():
            problems.append(Problem(
                f"shard {manifest.shard}: {path} names the bundle {manifest.bundle}, which is not beside it", None,
                "download the whole artifact of each shard (the manifest and its bundle, one folder); the bundle "
                "holds what the shard rendered"))
        found.append((manifest, path.parent))
    if problems:
        raise InputError(problems)
    if not found:
        elsewhere = "; ".join(f"{env}: {', '.join(shards)}" for env, shards in sorted(others.items()))
        raise InputError([Problem(
            f"no shard manifest (shard-K-of-N.json) of environment {environment} under {folder}"
            + (f" (only shards of other environments: {elsewhere})" if others else ""), None,
            f"run fleetflow schedule --environment {environment} --shard K/N --artifact DIR for every K first")])
    counts = {ShardSpec.parse(m.shard).count for m, _ in found}
    indexes = sorted(ShardSpec.parse(m.shard).index for m, _ in found)
    if len(counts) != 1 or indexes != list(range(1, max(counts) + 1)):
        shards = ", ".join(m.shard for m, _ in found)
        problems.append(Problem(f"the shard manifests under {folder} are not one complete set: shards {shards}",
                                None, "stitch exactly the N shards of one run (1/N .. N/N)"))
    runs: dict[tuple[str, str, str | None, tuple[tuple[str, str], ...]], list[str]] = {}  # inputs -> shards
    for m, _ in found:
        runs.setdefault((m.main_commit, m.env_commit, m.base_commit, tuple(sorted(m.workloads.items()))),
                        []).append(m.shard)
    if len(runs) > 1:
        differ = _differing([dict(key[3]) for key in runs])
        problems.append(Problem(
            f"the shards under {folder} were rendered from different inputs: "
            + "; ".join(f"{'shard' if len(shards) == 1 else 'shards'} {', '.join(shards)} from "
                        + _inputs_text(main, env, base) + _workloads_text(dict(workloads), differ)
                        for (main, env, base, workloads), shards in runs.items()),
            None, "stitch the N shards of one run (their artifacts are named fleetflow-shard-<environment>-K-of-N); "
            "in GitHub Actions, a shard job run again alone (Re-run failed jobs) renders the inputs of its own time "
            "while the others keep their artifacts: Re-run all jobs"))
    if problems:
        raise InputError(problems)
    return found


def _inputs_text(main_sha: str, env_sha: str, base: str | None, branch: str = "env-branch") -> str:
    onto = f"the GitOps branch at {short(base)}" if base else "an empty GitOps branch"
    return f"main@{short(main_sha)} + {branch}@{short(env_sha)} onto {onto}"


def _differing(reads: list[dict[str, str]]) -> set[str]:
    """The workload repositories (``<url> branch <branch>``) read at different commits, or not by every run."""
    return {key for key in set().union(*reads) if len({read.get(key) for read in reads}) > 1}


def _workloads_text(workloads: dict[str, str], differ: set[str]) -> str:
    return "".join(f", workload repo {key} at {short(workloads[key]) if key in workloads else '(not read)'}"
                   for key in sorted(differ))


def moved_inputs(manifest: ShardManifest, at: Pinned, base: str | None,
                 workloads: dict[str, str] | None = None) -> str | None:
    """None when the shards were rendered from the inputs the stitch job sees now (the GitOps branch tip, the
    environment branch and its pin, the commits of the registered workload repositories: ``workloads``, as
    :func:`workload_commits` gives them); otherwise what moved, and which run stitches instead, for the superseded
    outcome's message. A workload repository that moved counts: the state index the stitch writes records the
    workloads it read, so folders rendered from other commits would stay as they are until the next change."""
    workloads = manifest.workloads if workloads is None else workloads
    if (manifest.base_commit, manifest.main_commit, manifest.env_commit, manifest.workloads) == (
            base, at.main_sha, at.env_sha, workloads):
        return None
    differ = _differing([manifest.workloads, workloads])
    then = (_inputs_text(manifest.main_commit, manifest.env_commit, manifest.base_commit, at.branch)
            + _workloads_text(manifest.workloads, differ))
    now = _inputs_text(at.main_sha, at.env_sha, base, at.branch) + _workloads_text(workloads, differ)
    if manifest.env_commit != at.env_sha:
        # a push to the environment branch (a pin, a config commit) starts the schedule workflow again
        who = (f"the push that moved {at.branch} started a newer run, which renders and stitches the new inputs "
               f"(or the workflow's next scheduled run does)")
    else:
        # the GitOps branch moved (a merged PR) or a workload repository did: no event of the control-plane
        # repository follows
        who = ("the workflow's next scheduled run renders and stitches the new inputs; to do it now, run the shard "
               "jobs again (re-run the workflow)")
    return f"the shards were rendered from {then}; the inputs now are {now}. Nothing was written: {who}."


def unbundle(repo: BareRepo, manifest: ShardManifest, bundle: Path) -> None:
    """The objects of a shard's bundle into ``repo``; a bundle git cannot read (cut short by a failed download or
    upload, or not the one the manifest was written with) is an InputError, not a git failure to retry."""
    try:
        repo.git("bundle", "unbundle", str(bundle))
    except GitError as exc:
        raise InputError([Problem(
            f"shard {manifest.shard}: the bundle {bundle} does not read: {exc.reason or exc}", None,
            "stitch the artifacts as the shard jobs uploaded them (download them again, or run the shard jobs "
            "again: re-run the workflow); nothing was written")]) from exc


def stitch_commit(ctx: Context, environment: str, folder: Path) -> Rendered | ScheduleOutcome:
    """The GitOps commit of the shards under ``folder``: the branch's root tree with each shard's changed
    cluster-type folders and state shards put in by id, and the state index written; nothing pushed. When an
    input moved since the shards ran: the ``superseded`` outcome, and nothing written."""
    found = read_manifests(folder, environment)
    at = pinned_to_render(ctx, environment)
    heads = at.fetch_gitops(ctx.git)
    base = heads[at.gitops_branch]
    moved = moved_inputs(found[0][0], at, base, workload_commits(ctx))
    if moved is not None:
        return ScheduleOutcome(environment=environment, operation="superseded", main_commit=at.main_sha,
                               env_commit=at.env_sha, message=moved)
    repo = ctx.git.mirror(at.gitops_url)
    for manifest, where in found:
        if manifest.bundle is not None:
            unbundle(repo, manifest, where / manifest.bundle)
    tree = GitOpsTree(repo, base, clean_root(at.gitops_path))
    previous = tree.read_state()
    refuse_foreign_state(at, previous)
    edited = hand_edits(tree, previous)  # what the shard jobs put back (each found the same on this base)
    ctx.starting(f"{environment}: stitching {len(found)} shards of main@{short(at.main_sha)} + "
                 f"{at.branch}@{short(at.env_sha)} into {at.gitops_repo} (branch {at.gitops_branch})")
    # renders nothing: the index's commits, clusters, fingerprints and config keys come from the control plane
    result = render_environment(at.plane, environment, previous=previous, meta=Meta(at.main_sha, at.env_sha),
                                only=lambda _: False)
    folders: dict[str, str | None] = {}
    states: dict[str, str | None] = {}
    changes = Changes(config_keys=result.changes.config_keys)
    for manifest, _ in found:
        folders.update(manifest.folders)
        states.update(manifest.states)
        changes.added.extend(manifest.changes.added)
        changes.removed.extend(manifest.changes.removed)
        changes.changed.extend(manifest.changes.changed)
    shards = dict(result.state.assignments.shards)
    blobs = repo.blobs(sha for sha in states.values() if sha is not None)
    for ct, sha in states.items():
        if sha is None:
            shards.pop(ct, None)
        else:
            shard = Shard(ct, stored=True)
            shard.take(blobs[sha])
            shards[ct] = shard
    result.state.assignments = Assignments(shards)
    for part in (changes.added, changes.removed, changes.changed):
        part.sort()
    changes.unchanged = len(result.state.assignments) - len(changes.added) - len(changes.changed)
    edits = [TreeEdit(tree.path(ct), tree=sha) for ct, sha in sorted(folders.items())]
    edits += [TreeEdit(tree.path(shard_path(ct)), blob=sha) for ct, sha in sorted(states.items())]
    index = result.state.to_bytes()  # makes the parts too (part_files)
    edits += [TreeEdit(tree.path(path), data)
              for path, data in result.state.part_files(previous, tree.files([PART_DIR])).items()]
    if index != tree.state_bytes:
        edits.append(TreeEdit(tree.path(STATE_PATH), index))
    message, when = commit_message(ctx, at)
    kept = sorted(path for manifest, _ in found for path in manifest.foreign)
    written = commit_edits(tree, edits, message, ctx.git.identity, when, Ownership(foreign=kept))
    restored = edited.put_back(written.changed)
    return Rendered(at, heads, previous, written, changes, result.state.clusters,
                    lambda: commit_diff(repo, base, written.commit, tree.root),
                    [*unreadable_state(tree), *edited.warning(tree, restored), *result.warnings],
                    [shown_path(p) for p in restored])


def stitch_environment(ctx: Context, environment: str, folder: Path, *,
                       propose_rejected: bool = False) -> ScheduleOutcome:
    """Stitch the shards under ``folder`` into one GitOps commit and keep the environment's PR up to date, as
    ``fleetflow schedule`` does (bounded retries when a concurrent run pushes the head branch first); or, when an
    input moved since the shards ran, write nothing and answer ``superseded``. ``propose_rejected``: as
    :func:`~fleetflow.promotion.schedule.schedule_environment`."""

    def attempt() -> ScheduleOutcome:
        stitched = stitch_commit(ctx, environment, folder)
        return stitched if isinstance(stitched, ScheduleOutcome) else publish(ctx, environment, stitched,
                                                                              propose_rejected=propose_rejected)

    return retry_races(attempt, 3)


def commit_diff(repo: BareRepo, old: str | None, new: str | None, root: str) -> Iterator[str]:
    """The unified diff of the files under ``root`` that differ between two commits, a file at a time in
    :func:`~fleetflow.render.diff.review_order` (as the single job's PR body shows it); old and new files are
    read (in batches) only as far as the caller iterates."""
    if new is None:
        return
    old_tree = repo.tree_of(old) if old else None
    prefix = f"{root}/" if root else ""
    paths = review_order((p for p in repo.changed_paths(old_tree, repo.tree_of(new)) if p.startswith(prefix)), root)
    for start in range(0, len(paths), 256):
        batch = paths[start:start + 256]
        before = _blob_ids(repo, old, batch)
        after = _blob_ids(repo, new, batch)
        blobs = repo.blobs([*before.values(), *after.values()])
        for path in batch:
            text = file_diff(path[len(prefix):], blobs.get(before.get(path, "")), blobs.get(after.get(path, "")))
            if text:
                yield text


def _blob_ids(repo: BareRepo, commit: str | None, paths: list[str]) -> dict[str, str]:
    if commit is None or not paths:
        return {}
    return {e.path: e.sha for e in repo.ls_tree(commit, paths) if e.kind == "blob"}


def due_since(ctx: Context, at: Pinned) -> datetime:
    """When the schedule of the sharded environment at ``at`` fell due, at the latest: the later of the environment
    branch commit's committer time and the time of ``fleetflow/<env>`` on the pinned main commit (promote records
    ``pending`` "scheduled" right after it pushes the pin). A pin commit is dated as the main commit it pins
    (deterministic pin commits), so its own time alone would say "due for days" on the promotion of an old commit;
    the record's time is when it was pinned. Both are no later than the push, so the age is never too long (a
    re-pinned commit whose identical record was not posted again is the exception). One request: the first page of
    the main commit's combined status (GitHub: "Get the combined status for a specific reference", each status's
    ``updated_at``)."""
    times = [datetime.fromtimestamp(ctx.git.commit_time(ctx.cp_url, at.env_sha), UTC)]
    page = next(ctx.forge.status_pages(ctx.control_plane, at.main_sha), None)
    times += [s.updated_at for s in (page.reports if page is not None else ())
              if s.context == status_context(at.name) and s.updated_at is not None]
    return max(times)


def sharded_due(ctx: Context, at: Pinned, sharded_schedule: str, overdue: Problems) -> str:
    """What reconcile and check-rollout say of a sharded environment whose schedule is due (``sharded_schedule``:
    who renders it): for how long; and past :data:`SHARDED_OVERDUE`, the problem that nothing renders it and where
    to look, added to ``overdue`` (reconcile warns of it, exit 0: it sees only the time, not the failed run)."""
    age = max(ctx.clock() - due_since(ctx, at), timedelta(0))
    minutes = timedelta(minutes=age // timedelta(minutes=1))
    shown = format_duration(minutes) if minutes else "less than a minute"  # whole minutes: 5m, 3h5m
    inputs = f"main@{short(at.main_sha)} + {at.branch}@{short(at.env_sha)}"
    text = f"schedule due for {shown} ({inputs}): {sharded_schedule}"
    if age >= SHARDED_OVERDUE:
        overdue.add(
            f"the sharded schedule of {inputs} has been due for {shown}, longer than a run of the "
            f"{SHARDS_WORKFLOW} workflow takes ({format_duration(SHARDED_OVERDUE)}): it did not run, or a shard or "
            "the stitch job failed, and nothing else renders this environment",
            None, f"look at the {SHARDS_WORKFLOW} workflow's runs for {at.name}: a failed shard job names the "
            f"problem at its line. Fix it in a commit on main and promote that, or on the branch {at.branch}; re-run "
            "the workflow if the runner failed. To see a render problem locally, in a checkout of the control plane: "
            f"git checkout {at.branch} && fleetflow validate --into {at.branch} --environment {at.name}")
    return text
