"""A proposed change to the control-plane repo (a pull request), paired with what it will be rendered with.

A pull request into ``main`` changes what every environment renders: each environment's branch is read as it is
now. A pull request into an environment branch changes that environment only, and schedule renders it with the
``main`` commit the branch pins (``base-repo.yaml``), or ``main``'s tip before the first promotion. This module
finds those pairs in a checkout of the change (the pull request's merge commit, as ``actions/checkout`` leaves it
on a ``pull_request`` event, with every branch fetched) and reads the other side of each pair from git's objects
(no folder written); the checkout's own working tree is read as it is, uncommitted edits included, so the same
command checks a change on a laptop before it is pushed.

Branches are read from ``refs/remotes/origin/<branch>`` (what a clone or ``actions/checkout`` with
``fetch-depth: 0`` has), else from a local branch of that name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fleetflow.errors import GitError, InputError, Location, Problem, UsageError, some_of, unknown_environment
from fleetflow.forge.git import BareRepo, run_git
from fleetflow.model.controlplane import Resource
from fleetflow.model.documents import ParseCache, Tree
from fleetflow.model.references import environment_branch
from fleetflow.model.resources import EnvironmentSpec
from fleetflow.promotion.context import MAIN, CommitTree, read_environments, short
from fleetflow.promotion.pin import PIN_FILE, promote_command, read_pin


@dataclass(frozen=True)
class Side:
    """One tree of a pair: where its files are (the checkout's folder, or a commit's files) and how messages name
    them."""

    root: Path | CommitTree
    label: str

    def tree(self) -> Tree | CommitTree:
        """What :func:`fleetflow.model.documents.read_tree` reads."""
        return Tree(self.root, self.label) if isinstance(self.root, Path) else self.root


@dataclass(frozen=True)
class Pair:
    """What schedule will render for ``environment`` once the change has landed."""

    environment: str
    branch: str  # the environment's branch in the control-plane repo
    main: Side
    env: Side


@dataclass(frozen=True)
class ChangePlan:
    """The pairs to check, and what could not be paired (warnings: they fail only with --strict)."""

    into: str
    pairs: list[Pair]
    warnings: list[Problem]


def _git_dir(checkout: Path) -> Path:
    proc = run_git(["rev-parse", "--absolute-git-dir"], cwd=checkout, check=False)
    if proc.returncode != 0:
        raise UsageError(
            f"--repo {checkout}: not a git checkout of the control-plane repo "
            "(clone it, or use actions/checkout with fetch-depth: 0)"
        )
    return Path(proc.stdout.decode().strip())


def _branch_commit(repo: BareRepo, branch: str) -> str | None:
    for ref in (f"refs/remotes/origin/{branch}", f"refs/heads/{branch}"):
        sha = repo.resolve(f"{ref}^{{commit}}")
        if sha is not None:
            return sha
    return None


def _label(checkout: Path) -> str:
    """How messages name files of the working tree: by their path in the repository when the checkout is the
    current folder (so a GitHub annotation's ``file=`` points into the pull request's diff), relative to the
    current folder when it is below it, else by the path as given."""
    here = Path.cwd().resolve()
    where = checkout.resolve()
    if where == here:
        return ""
    if where.is_relative_to(here):
        return where.relative_to(here).as_posix()
    return str(checkout)


def plan_change(checkout: Path, into: str, *, environment: str | None = None,
                main_branch: str = MAIN, cache: ParseCache | None = None) -> ChangePlan:
    """Pair the working tree of ``checkout`` (the change, as it would land on branch ``into``) with the other side
    of each environment it affects, read from git's objects (until 2026-11-28 exported into a scratch folder, whose
    cost followed the number of files).

    Raises UsageError when ``into`` is neither ``main_branch`` nor an environment's branch, InputError when the
    Environments cannot be read, GitError when a commit the pairing needs is not in the checkout."""
    repo = BareRepo(_git_dir(checkout))
    work = Side(checkout, _label(checkout))
    from_git: dict[str, Side] = {}

    def side(branch: str, sha: str) -> Side:
        if sha not in from_git:
            label = f"{branch}@{short(sha)}"  # messages name the commit; the parse cache, the branch
            from_git[sha] = Side(CommitTree.of(repo, sha, label, cache_label=branch), label)
        return from_git[sha]

    warnings: list[Problem] = []
    if into == main_branch:
        envs = read_environments(Tree(checkout, work.label), cache, where=f"the change into {main_branch}")
        if environment is not None and environment not in envs:
            raise unknown_environment(environment, envs)
        pairs: list[Pair] = []
        for name, env in sorted(envs.items()):
            if environment is not None and name != environment:
                continue
            branch = environment_branch(env)
            sha = _branch_commit(repo, branch)
            if sha is None:
                warnings.append(Problem(
                    f"environment {name}: no branch {branch!r} in {checkout}: its configuration was not checked",
                    env.where("metadata", "name"),
                    f"create the {branch} branch first (cluster types, clusters, configs, GitOpsRepo); in a "
                    "workflow, check the repo out with fetch-depth: 0 so every branch is there"
                    + _renamed_hint(repo, envs, main_branch, side, cache),
                ))
                continue
            pairs.append(Pair(name, branch, work, side(branch, sha)))
        if warnings and _is_shallow(repo):
            paired = {p.environment for p in pairs}
            missing = [environment_branch(env) for name, env in sorted(envs.items()) if name not in paired]
            raise GitError(
                f"{checkout} is a shallow clone, without the environment branch{'es' if len(missing) > 1 else ''} "
                f"{some_of(missing, 5)}: nothing was checked (actions/checkout fetches a single commit unless "
                "fetch-depth: 0); check the repo out with fetch-depth: 0, or run "
                "git fetch --unshallow origin '+refs/heads/*:refs/remotes/origin/*'"
            )
        return ChangePlan(into, pairs, warnings)

    main_sha = _pinned_main(repo, checkout, main_branch)
    main_side = side(main_branch, main_sha)
    envs = read_environments(main_side.tree(), cache, where=main_side.label)
    by_branch = {environment_branch(env): name for name, env in envs.items()}
    if into not in by_branch:
        known = ", ".join(f"{b} ({n})" for b, n in sorted(by_branch.items())) or "none"
        raise UsageError(
            f"--into {into}: not {main_branch} and not the branch of any Environment on {main_side.label} "
            f"(environment branches: {known})"
        )
    name = by_branch[into]
    if environment is not None and environment != name:
        raise UsageError(f"--environment {environment}: branch {into} belongs to environment {name}")
    moved = _pin_moved_by_hand(repo, checkout, work.label, into, name)
    if moved is not None:
        warnings.append(moved)
    return ChangePlan(into, [Pair(name, into, main_side, work)], warnings)


def _pin_moved_by_hand(repo: BareRepo, checkout: Path, label: str, into: str, environment: str) -> Problem | None:
    """The change moves the pin (``spec.commit`` of :data:`PIN_FILE`) away from what branch ``into`` pins: a
    promotion made by hand in a pull request, as Kalypso's promotion PRs edit ``base-repo.yaml``. ``promote`` pins a
    commit only once every upstream environment recorded a successful rollout of it; merged, this pin skips that
    check (the next schedule proposes it). Until 2026-11-29 the check passed it green, ``--strict`` too. A warning,
    not an error: a person may mean it (the pull request is the review); ``--strict`` fails on it."""
    base = _branch_commit(repo, into)
    pin_file = checkout / PIN_FILE
    if base is None:
        return None
    try:
        before = read_pin(repo.read_file(base, PIN_FILE), f"{into}@{short(base)}:{PIN_FILE}").commit
    except InputError:  # the branch's own pin does not read: schedule says so for the branch
        return None
    after = read_pin(pin_file.read_text(encoding="utf-8") if pin_file.is_file() else None, str(pin_file)).commit
    if after is None or after == before:
        return None
    was = f"main@{short(before)}" if before else "no commit"
    return Problem(
        f"this change moves {environment}'s pin from {was} to main@{short(after)} by hand: merged, it skips the "
        f"gate (fleetflow promote pins a commit only once every environment {environment} comes after rolled it "
        "out), and the next schedule proposes it",
        Location(PIN_FILE if label in ("", ".") else f"{label}/{PIN_FILE}"),
        f"leave {PIN_FILE} out of the change and promote instead: {promote_command(environment, short(after))} (an "
        "older commit is a rollback, held until --release)",
    )


def _renamed_hint(repo: BareRepo, envs: dict[str, Resource[EnvironmentSpec]], main_branch: str,
                  side: Callable[[str, str], Side], cache: ParseCache | None) -> str:
    """When the change drops Environments whose branches exist (read from ``main_branch``'s tip, only once a
    branch is missing): a rename, most likely, that left the old branch behind. Until 2026-11-29 the hint said only
    to create the new branch, which would start the renamed environment from an empty configuration."""
    sha = _branch_commit(repo, main_branch)
    if sha is None:
        return ""
    try:
        before = read_environments(side(main_branch, sha).tree(), cache, where=main_branch)
    except InputError:
        return ""
    dropped = [(name, environment_branch(env)) for name, env in sorted(before.items())
               if name not in envs and _branch_commit(repo, environment_branch(env)) is not None]
    if not dropped:
        return ""
    name, branch = dropped[0]
    return (f"; or, if it is {name} renamed, keep {name}'s configuration: spec.branch: {branch} on this Environment "
            f"(the {branch} branch is there, and this change removes {name})")


def _is_shallow(repo: BareRepo) -> bool:
    """Whether the checkout is a shallow clone (``git rev-parse --is-shallow-repository``): what
    ``actions/checkout`` leaves by default ("Only a single commit is fetched by default ... Set fetch-depth: 0 to
    fetch all history for all branches and tags", https://github.com/actions/checkout#checkout-v4). An environment
    branch missing there says nothing of the repository: until 2026-11-29 each was a warning to "create the branch
    first", and without --strict the check passed with nothing checked."""
    return repo.git("rev-parse", "--is-shallow-repository", check=False).stdout.strip() == b"true"


def _pinned_main(repo: BareRepo, checkout: Path, main_branch: str) -> str:
    """The main commit an environment branch's change renders with: its pin, else main's tip."""
    pin_file = checkout / PIN_FILE
    pin = read_pin(pin_file.read_text(encoding="utf-8") if pin_file.is_file() else None, str(pin_file))
    if pin.commit:
        sha = repo.resolve(f"{pin.commit}^{{commit}}")
        if sha is None:
            raise GitError(
                f"main@{pin.commit[:12]}, pinned in {PIN_FILE}, is not in {checkout}: fetch the whole history "
                "(git fetch origin, or actions/checkout with fetch-depth: 0)"
            )
        return sha
    sha = _branch_commit(repo, main_branch)
    if sha is None:
        raise GitError(
            f"no {main_branch} branch in {checkout}: fetch it (git fetch origin {main_branch}, or "
            "actions/checkout with fetch-depth: 0)"
        )
    return sha
