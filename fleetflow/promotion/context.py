"""What every promotion step shares: the forge, the git mirrors, the clock, and reading the control plane at a
commit. Nothing here is remembered between runs: every fact is re-derived from git and the forge."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from fleetflow.clock import utc_now
from fleetflow.errors import GitError, InputError, Location, Problem, Problems, UsageError, unknown_environment
from fleetflow.forge.base import Forge
from fleetflow.forge.git import BareRepo, GitRepos, PushRejected
from fleetflow.forge.registrations import RegistrationFetcher
from fleetflow.model.controlplane import ControlPlane, Resource, build_resource, load_control_plane
from fleetflow.model.documents import Document, GitFiles, ParseCache, Tree, read_tree
from fleetflow.model.references import (
    check_environment_chain,
    check_single,
    environment_branch,
    environment_order,
)
from fleetflow.model.resources import EnvironmentSpec, GitOpsRepoSpec
from fleetflow.promotion.gitops import GitOpsTree, clean_root
from fleetflow.promotion.pin import PIN_FILE, Pin, promote_command, read_pin
from fleetflow.render.incremental import RenderState
from fleetflow.render.pipeline import checked_inputs

MAIN = "main"
LOOK_BACK = 20  # commits before main's tip read for Environments when the tip's do not read (current_environments)


SCHEDULED = "scheduled"
"""The description of the ``pending`` post on :func:`status_context` that opens a promotion: promote writes it
when it pins a commit, and the delivery history reads it as the moment the commit was pinned."""


def status_context(environment: str) -> str:
    return f"fleetflow/{environment}"


def head_branch(environment: str) -> str:
    return f"fleetflow/{environment}"


def short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


# GitHub's code for a push its rulesets declined ("GH013: Repository rule violations found for refs/heads/main",
# GitHub Docs, "Troubleshooting your migration with GitHub Enterprise Importer", "Repository rule violations found")
RULE_VIOLATIONS = "GH013"


@contextmanager
def doctor_names_the_rule(what: str, check: str) -> Iterator[None]:
    """Around one of fleetflow's own pushes: a failure that is not a lost race (:class:`PushRejected`, retried by
    the caller) already says what the remote said. When GitHub says its rulesets declined the push (GH013), this
    adds which ``fleetflow doctor`` check names the ruleset; any other failure is left as it is."""
    try:
        yield
    except PushRejected:
        raise
    except GitError as error:
        if RULE_VIOLATIONS not in str(error):
            raise
        raise GitError(f"{error}\nGitHub's rulesets declined {what}: `fleetflow doctor` names the ruleset and its fix "
                       f"(check {check})", command=error.command, reason=error.reason) from error


@dataclass(frozen=True)
class CommitTree:
    """The files of one commit of a mirror, as :func:`fleetflow.model.documents.read_tree` reads them
    (:class:`fleetflow.model.documents.GitFiles`): listed once (``git ls-tree -r``), read by blob id, only those
    the parse cache does not hold, and never written to a folder."""

    repo: BareRepo
    commit: str
    label: str
    cache_label: str
    _listed: Sequence[tuple[str, str]]

    @classmethod
    def of(cls, repo: BareRepo, commit: str, label: str, cache_label: str | None = None) -> CommitTree:
        """The commit's files, listed now: its blobs but symbolic links (never followed) and submodules.
        ``cache_label`` (default: ``label``) names them in the parse cache: give one that does not change from
        commit to commit (the branch) when ``label`` names the commit."""
        return cls(repo, commit, label, label if cache_label is None else cache_label,
                   [(e.path, e.sha) for e in repo.regular_files(commit)])

    def listing(self) -> Sequence[tuple[str, str]]:
        return self._listed

    def read(self, blob_ids: Sequence[str]) -> Mapping[str, bytes]:
        return self.repo.blobs(blob_ids)

    def display(self, path: str) -> str:
        """A file's name in messages (``label/path``, as a document's location has it)."""
        return os.path.join(self.label, path)


def read_environments(tree: Tree | GitFiles, cache: ParseCache | None, *,
                      where: str) -> dict[str, Resource[EnvironmentSpec]]:
    """The Environment resources of a main tree (only those: cheap, no registrations). ``where`` names the tree
    in the message when it defines none. Raises InputError with every problem found."""
    collected = Problems()
    docs = read_tree(tree, collected, cache=cache)
    envs: dict[str, Resource[EnvironmentSpec]] = {}
    for doc in docs:
        if doc.kind == "Environment":
            res = build_resource(doc, "main", collected)
            if res is not None:
                envs[res.name] = res
    if not envs and not collected:
        collected.add(
            f"no Environment on {where}",
            None,
            "define the environment chain on main (kind: Environment), e.g. in .environments/",
        )
    collected.raise_if_any()
    return envs


@dataclass
class Context:
    forge: Forge
    git: GitRepos
    control_plane: str
    clock: Callable[[], datetime] = utc_now
    say: Callable[[str], None] = field(default=lambda _text: None)  # a step done (or under way and writing)
    # a step that starts and has written nothing yet (a render): narrated as ``say`` is; a failure before the next
    # ``say`` is one before any step finished (the text's last sentence says so). None: ``say``
    say_started: Callable[[str], None] | None = None
    main_branch: str = MAIN
    plan_dir: Path | None = None  # where schedule writes each environment's full plan (None: it writes none)
    run_url: str | None = None  # the workflow run this runs in (the PR body links its artifacts)
    server_url: str | None = None  # GitHub's web address (the PR body links the compare view)
    # a warning for the run's output (the command's ``Reply.warn``): what the run went on despite
    warn: Callable[[Problem], None] = field(default=lambda _problem: None)
    _files: dict[tuple[str, str], CommitTree] = field(default_factory=dict)  # by (url, commit), listed once
    _environments: dict[str, dict[str, Resource[EnvironmentSpec]]] = field(default_factory=dict)
    _fetcher: RegistrationFetcher | None = None
    _pins: dict[tuple[str, str], Pin] = field(default_factory=dict)
    _unreadable: dict[str, InputError] = field(default_factory=dict)  # main commits whose Environments do not read
    _warned_tips: set[str] = field(default_factory=set)  # main's tips whose stand-in this run has warned of

    def starting(self, message: str) -> None:
        """Say that a step starts, which has written nothing yet (:attr:`say_started`)."""
        (self.say_started or self.say)(message)

    def close(self) -> None:
        """Nothing to clean up any more (the trees a run reads are no longer exported to a scratch folder); kept
        so that every caller's ``with Context(...)`` stays as it is."""

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cp_url(self) -> str:
        return self.forge.git_url(self.control_plane)

    def files(self, url: str, sha: str, label: str) -> CommitTree:
        """The files of ``sha`` as :func:`read_tree` reads them from git (listed once per run and commit);
        ``label`` names them in messages. Nothing is written: until 2026-11-28 each run exported the trees it read
        to a scratch folder and read them back, whose cost followed the number of files (one document a file, as
        Kalypso's control plane keeps them: loading the plane took 0.8-1.5 s at 100k here, most of it the file
        system's; now 0.09-0.19 s)."""
        key = (url, sha)
        if key not in self._files:
            self._files[key] = CommitTree.of(self.git.mirror(url), sha, label)
        return dataclasses.replace(self._files[key], label=label, cache_label=label)

    def main_tip(self) -> str:
        sha = self.git.fetch_branch(self.cp_url, self.main_branch)
        if sha is None:
            raise GitError(f"the control-plane repo {self.control_plane} has no {self.main_branch} branch: set it up "
                           "with fleetflow init (a starter chain when the repository is empty), or push "
                           f"{self.main_branch} with the Environments")
        return sha

    def environments(self, main_sha: str) -> dict[str, Resource[EnvironmentSpec]]:
        """The Environment resources of ``main`` at ``main_sha`` (only those: cheap, no registrations).
        Read once per commit and run; callers must not change the mapping."""
        if main_sha in self._unreadable:
            raise self._unreadable[main_sha]
        if main_sha not in self._environments:
            try:
                self._environments[main_sha] = self._read_environments(main_sha)
            except InputError as error:
                self._unreadable[main_sha] = error
                raise
        return self._environments[main_sha]

    def current_environments(self, tip: str) -> dict[str, Resource[EnvironmentSpec]]:
        """The Environments the fleet runs by now: those of main's tip ``tip``; when they do not read (a push to
        main broke a file), those of the newest commit before it on main (first parents, at most
        :data:`LOOK_BACK`) whose Environments read, with warnings (:attr:`warn`, once a run) naming the tip's
        problems. A bad push then stops its own promotion (``promote`` and ``reconcile`` read the commit they
        promote, and refuse it), not the gates, schedules and status of the commits already on their way: until
        2026-11-28 it stopped ``status``, ``check-rollout``, ``reconcile``, ``metrics`` and ``doctor`` for every
        environment. When none of those commits reads either: the tip's problems."""
        try:
            return self.environments(tip)
        except InputError as broken:
            for sha in self.git.log(self.cp_url, tip, limit=LOOK_BACK + 1, first_parent=True)[1:]:
                try:
                    envs = self.environments(sha)
                except InputError:
                    continue
                if tip not in self._warned_tips:
                    self._warned_tips.add(tip)
                    self._warn_stand_in(tip, sha, broken)
                return envs
            raise

    def _warn_stand_in(self, tip: str, sha: str, broken: InputError) -> None:
        for problem in broken.problems():
            self.warn(Problem(f"main's tip main@{short(tip)} does not read: {problem.message}", problem.location,
                              problem.hint))
        self.warn(Problem(
            f"this run goes by the Environments of main@{short(sha)}, the newest commit before main's tip whose "
            f"Environments read: promoting main@{short(tip)} fails until main is fixed; the rollouts, gates and "
            "schedules of the commits already promoted go on", None,
            "push the fix to main: that commit is promoted as any other",
        ))

    def _read_environments(self, main_sha: str) -> dict[str, Resource[EnvironmentSpec]]:
        """Also the chain's problems: every fleet command walks it (an ``after`` naming an environment main does
        not define, or a cycle, leaves no order to promote in), and refuses before it writes anything."""
        envs = read_environments(self.files(self.cp_url, main_sha, self.main_branch),
                                 ParseCache(self.git.cache_dir / "parsed"), where=f"main@{short(main_sha)}")
        problems = Problems()
        check_environment_chain(envs, problems, main_branch=self.main_branch)
        problems.raise_if_any()
        return envs

    def environment(self, envs: dict[str, Resource[EnvironmentSpec]], name: str) -> Resource[EnvironmentSpec]:
        if name not in envs:
            raise unknown_environment(name, envs)
        return envs[name]

    @staticmethod
    def env_branch(env: Resource[EnvironmentSpec]) -> str:
        return environment_branch(env)

    def pin(self, env_sha: str | None, branch: str) -> Pin:
        """The pin on the environment branch ``branch`` at ``env_sha``; InputError when its file does not read.
        Read once per commit and run (a commit's files do not change): reconcile asks for an environment's pin when
        it looks at the environment, again for its steps, and for its upstream's gate."""
        if env_sha is None:
            return Pin(None, None)
        key = (env_sha, branch)
        if key not in self._pins:
            self._pins[key] = read_pin(self.git.read_bytes(self.cp_url, env_sha, PIN_FILE), f"{branch}/{PIN_FILE}")
        return self._pins[key]

    def base_repos_elsewhere(self, branch: str, env_sha: str) -> list[Document]:
        """The BaseRepo documents of the environment branch at ``env_sha`` outside :data:`PIN_FILE` at its root.
        fleetflow reads and writes the pin only there: one elsewhere is a pin it cannot see, and writing a new one
        would give the branch two. Ask only when the pin file holds none (``Pin.present``: with one there, another
        elsewhere is a duplicate, which loading the plane reports): it reads the branch's files (parse cache)."""
        tree = self.files(self.cp_url, env_sha, branch)  # the plane's label: the same cache entries
        docs = read_tree(tree, Problems(), cache=ParseCache(self.git.cache_dir / "parsed"))
        pin_file = tree.display(PIN_FILE)
        return [doc for doc in docs if doc.kind == "BaseRepo" and doc.location.file != pin_file]

    def render_state(self, url: str, sha: str | None, output_path: str) -> RenderState | None:
        """The ``state.json`` of a GitOps commit whose environment output is at ``output_path``; None when the
        commit is unknown or holds none that reads."""
        if sha is None:
            return None
        try:
            return GitOpsTree(self.git.mirror(url), sha, clean_root(output_path)).read_state()
        except UsageError:  # a path leaving the repo: it holds no state fleetflow wrote
            return None

    def workload_commits(self) -> dict[tuple[str, str], str]:
        """(repo URL without credentials, branch) -> the commit this run read, of every workload repository a
        ``WorkloadRegistration`` of a plane it loaded names."""
        return dict(self._fetcher.commits) if self._fetcher is not None else {}

    def plane(self, main_sha: str, env_branch: str, env_sha: str) -> ControlPlane:
        """main@main_sha + the environment branch at env_sha, loaded and structurally checked."""
        if self._fetcher is None:
            self._fetcher = RegistrationFetcher(self.git.cache_dir / "workloads")
        return load_control_plane(
            # labels without the commit: the parse cache is keyed by label and blob, so a label that changed with
            # every commit made each promotion parse the whole environment again (minutes at 30,000 clusters);
            # the commits are named in the run's own messages
            self.files(self.cp_url, main_sha, self.main_branch),
            self.files(self.cp_url, env_sha, env_branch),
            fetch=self._fetcher,
            cache=ParseCache(self.git.cache_dir / "parsed"),
        )


@dataclass
class Pinned:
    """An environment at its pinned main commit: where schedule and check-rollout both start."""

    name: str
    envs: dict[str, Resource[EnvironmentSpec]]  # the chain on main's tip
    env_at_pin: Resource[EnvironmentSpec]  # the Environment as main@pin defines it (policies, rollout)
    envs_at_pin: dict[str, Resource[EnvironmentSpec]]
    branch: str
    env_sha: str
    main_sha: str
    load_plane: Callable[[], ControlPlane]
    gitops_repo: str
    gitops_branch: str
    gitops_path: str
    gitops_url: str
    gitops: Resource[GitOpsRepoSpec]  # the GitOpsRepo the four above come from (its lines, for a problem)

    @functools.cached_property
    def plane(self) -> ControlPlane:
        """main@pin with the environment branch, loaded and checked (InputError with every problem): what a
        schedule renders. Loaded when first asked for: the gate, ``status`` and reconcile's look at an environment
        need only where its output goes (``gitops_repo_at``), so a mistake on the environment branch stops the next
        schedule, at its line, and not the gate of what was rolled out before it."""
        return self.load_plane()

    def fetch_gitops(self, git: GitRepos, *, with_head: bool = True) -> dict[str, str | None]:
        """:func:`fetch_gitops_heads` for this environment."""
        return fetch_gitops_heads(git, self.gitops_url, self.name, self.gitops, with_head=with_head)


def fetch_gitops_heads(git: GitRepos, url: str, environment: str, gitops: Resource[GitOpsRepoSpec], *,
                       with_head: bool = True) -> dict[str, str | None]:
    """Fetch the environment's GitOps branch (and, ``with_head``, its PR head branch) from ``url``: their commits,
    None for a head branch not there yet. InputError when the GitOps repository has no such branch: a PR needs its
    base branch, so a run that would render into it, or pin for it, stops here, before it writes anything."""
    branch = gitops.spec.branch or environment
    heads = git.fetch(url, [branch, head_branch(environment)] if with_head else [branch])
    if heads[branch] is None:
        raise missing_gitops_branch(environment, gitops)
    return heads


def gitops_repo_at(ctx: Context, environment: str, branch: str, env_sha: str) -> Resource[GitOpsRepoSpec]:
    """The environment branch's GitOpsRepo at ``env_sha``, read without the rest of the plane: the branch's
    documents (parse cache), of which only the GitOpsRepo is built and checked. A file that does not read is a
    problem here only when no GitOpsRepo was found (it may be in that file); two GitOpsRepos are one too many."""
    read = Problems()
    docs = read_tree(ctx.files(ctx.cp_url, env_sha, branch), read, cache=ParseCache(ctx.git.cache_dir / "parsed"))
    built = Problems()
    found = [r for r in (build_resource(d, "env", built) for d in docs if d.kind == "GitOpsRepo") if r is not None]
    built.raise_if_any()
    check_single("GitOpsRepo", found, built)
    built.raise_if_any()
    if not found:
        read.raise_if_any()
        raise no_gitops_repo(environment, branch)
    return found[0]


def gitops_repo_of(plane: ControlPlane, environment: str, branch: str) -> Resource[GitOpsRepoSpec]:
    """The GitOpsRepo of a plane already loaded (and so checked); InputError when its branch names none."""
    gitops = plane.gitops_repo()
    if gitops is None:
        raise no_gitops_repo(environment, branch)
    return gitops


def no_gitops_repo(environment: str, branch: str) -> InputError:
    return InputError([Problem(
        f"environment {environment}: no GitOpsRepo on branch {branch}", None,
        "add a GitOpsRepo (spec.repo, spec.branch, spec.path) to the environment branch",
    )])


def check_before_pinning(ctx: Context, environment: str, branch: str, main_sha: str, env_sha: str) -> None:
    """main@main_sha with the environment branch at env_sha must load, say where its output goes and pass the
    render's checks (``checked_inputs``) before a pin is written: InputError with every problem otherwise. A pin
    on a commit that cannot render leaves the environment pinned to it with no schedule, and its gate pending."""
    plane = ctx.plane(main_sha, branch, env_sha)
    gitops = gitops_repo_of(plane, environment, branch)
    checked_inputs(plane, environment)
    # and the GitOps repo answers and has the branch (the schedule's own fetch right after is then a look at the
    # remote's heads)
    fetch_gitops_heads(ctx.git, gitops_url(ctx, gitops), environment, gitops)


def missing_gitops_branch(environment: str, gitops: Resource[GitOpsRepoSpec]) -> InputError:
    """The GitOpsRepo names a branch its repository does not have: a pull request needs its base branch, so nothing
    can be proposed there (found before anything is written)."""
    branch = gitops.spec.branch or environment
    named = (f"spec.branch {branch!r}" if gitops.spec.branch
             else f"branch {branch!r} (no spec.branch: the environment's name)")
    return InputError([Problem(
        f"environment {environment}: GitOpsRepo {gitops.name} names {named}, which {gitops.spec.repo} does not have",
        gitops.where("spec", "branch"),
        "create it (fleetflow init creates each environment's GitOps branch with its workflow), or set spec.branch "
        "to a branch the repo has; nothing was written",
    )])


def refuse_foreign_state(at: Pinned, state: RenderState | None) -> None:
    """InputError when the GitOps branch and folder ``at`` renders into hold another environment's output (its
    state names that environment): two GitOpsRepos naming one branch and folder (an environment branch copied,
    its GitOpsRepo renamed and its ``branch`` left). Until 2026-11-29 a schedule took that state as its own, so
    its PR deleted the other environment's files and wrote its own in their place (with ``autoMerge``, the other
    environment's clusters then ran this one's config), and the gate of one read the other's rollout as its own.

    Only an environment main still defines is another's: the output of one main no longer defines (renamed, or
    removed) is taken over, as before, its assignments replaced by this environment's."""
    other = state.other_environment(at.name, at.envs) if state is not None else None
    if other is None:
        return
    folder = "its root" if at.gitops_path in ("", ".") else f"folder {at.gitops_path}"
    raise InputError([Problem(
        f"environment {at.name}: GitOpsRepo {at.gitops.name} renders into branch {at.gitops_branch} of "
        f"{at.gitops_repo}, {folder}, which holds environment {other}'s output (its state names {other}): two "
        "environments would write the same files, each replacing the other's",
        at.gitops.where("spec", "branch"),
        f"give {at.name} a GitOps branch or folder of its own (spec.branch or spec.path of GitOpsRepo "
        f"{at.gitops.name}, on the {at.branch} branch); nothing was written",
    )])


def gitops_url(ctx: Context, gitops: Resource[GitOpsRepoSpec]) -> str:
    """The GitOps repo's URL for git, mirrored without blobs (read in parts)."""
    return ctx.git.blobless(ctx.forge.git_url(gitops.spec.repo))


def pinned(ctx: Context, environment: str, *, required: bool, to_render: bool = False,
           env_sha: str | None = None, tip: str | None = None) -> Pinned | None:
    """Read the environment branch, its pin, main at the pin and where its GitOps output goes (``to_render``: from
    the plane, loaded now; otherwise from the branch's GitOpsRepo alone, the plane loaded when asked for).
    ``env_sha``: the environment branch at this commit of the mirror, not at its head (``promote`` renders the
    pin commit it made before pushing it). ``tip``: main's tip, when the caller has just fetched it (one fetch).

    Without a branch or a pin: None, or (``required``) an InputError saying how to get one."""
    if tip is None:
        tip = ctx.main_tip()
    envs = ctx.current_environments(tip)
    env = ctx.environment(envs, environment)
    branch = ctx.env_branch(env)
    if env_sha is None:
        env_sha = ctx.git.fetch_branch(ctx.cp_url, branch)
    pin = ctx.pin(env_sha, branch)
    if env_sha is None or pin.commit is None:
        if not required:
            return None
        if env_sha is None:
            raise InputError([Problem(
                f"environment {environment}: branch {branch!r} does not exist in the control-plane repo",
                None, f"create the {branch} branch with the environment's cluster types, configs and GitOpsRepo",
            )])
        if not pin.present:
            misplaced_pin(ctx, environment, branch, env_sha)
        raise InputError([Problem(
            f"environment {environment} has no pinned main commit ({PIN_FILE} on {branch})",
            None, f"promote a commit first: {promote_command(environment)}",
        )])
    # on main, not merely in the mirror: a commit of another branch's history (any clone can push one) would
    # render what no one merged to main (until 2026-11-28 only its existence was checked)
    main_sha = ctx.git.resolve(ctx.cp_url, pin.commit)
    if main_sha is None or not ctx.git.is_ancestor(ctx.cp_url, main_sha, tip):
        raise InputError([Problem(
            f"environment {environment} is pinned to {pin.commit}, which is not on {ctx.main_branch}",
            Location(f"{branch}/{PIN_FILE}"),
            f"promote a commit of {ctx.main_branch}: {promote_command(environment)} (it writes the pin)",
        )])
    envs_at_pin = ctx.environments(main_sha)
    if to_render:  # the plane first: its problems are the render's, before anything is fetched, said or written
        plane = ctx.plane(main_sha, branch, env_sha)
        gitops = gitops_repo_of(plane, environment, branch)
        load = lambda: plane  # noqa: E731
    else:
        gitops = gitops_repo_at(ctx, environment, branch, env_sha)
        load = lambda: ctx.plane(main_sha, branch, env_sha)  # noqa: E731
    return Pinned(
        environment, envs, envs_at_pin.get(environment, env), envs_at_pin, branch, env_sha, main_sha, load,
        gitops.spec.repo, gitops.spec.branch or environment, gitops.spec.path,
        gitops_url(ctx, gitops), gitops,
    )


def pinned_to_render(ctx: Context, environment: str, env_sha: str | None = None, tip: str | None = None) -> Pinned:
    """``pinned`` (required) with its plane loaded and checked: a run stopped by bad input says it stopped before
    any step."""
    at = pinned(ctx, environment, required=True, to_render=True, env_sha=env_sha, tip=tip)
    assert at is not None
    return at


def misplaced_pin(ctx: Context, environment: str, branch: str, env_sha: str) -> None:
    """Raise InputError, one problem per document, when the environment branch holds BaseRepo documents outside
    :data:`PIN_FILE` at its root: a pin fleetflow cannot see (call it when the pin file holds none,
    :meth:`Context.base_repos_elsewhere`)."""
    elsewhere = ctx.base_repos_elsewhere(branch, env_sha)
    if elsewhere:
        raise InputError([Problem(
            f"environment {environment}: a BaseRepo outside {PIN_FILE}: fleetflow reads and writes the pin only in "
            f"{PIN_FILE} at the root of branch {branch}, so it cannot see this one",
            doc.location,
            f"move the document to {PIN_FILE} on {branch} (git mv {doc.location.file.removeprefix(branch + '/')} "
            f"{PIN_FILE}, when the file holds nothing else); nothing was written",
        ) for doc in elsewhere])


def chain_order(envs: dict[str, Resource[EnvironmentSpec]]) -> list[str]:
    """Environments in promotion order (upstreams first, ties by name); InputError on a cycle."""
    problems = Problems()
    order = environment_order(envs, problems)
    problems.raise_if_any()
    return order
