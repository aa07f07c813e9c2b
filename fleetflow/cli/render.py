"""``fleetflow render``: write an environment's GitOps tree to a directory."""

from __future__ import annotations

import os
import posixpath
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, check_environment, head_branch_name, head_commit, load, trees
from fleetflow.cli.errors import Reply, handled
from fleetflow.cli.paths import CommandPath
from fleetflow.cli.terminal import TERMINAL
from fleetflow.errors import InputError, Location, Problem, Problems, UsageError, shown_path
from fleetflow.forge.git import run_git
from fleetflow.model.controlplane import ControlPlane, Resource
from fleetflow.model.resources import GitOpsRepoSpec
from fleetflow.render.diff import git_blob_id
from fleetflow.render.incremental import STATE_PATH, RenderState
from fleetflow.render.output import apply_result, in_the_way, kustomization_warnings, read_state, survey
from fleetflow.render.pipeline import Meta, render_environment, trees_named
from fleetflow.render.summary import RenderSummary, changes_text, headline


@click.command()
@trees
@click.option("--environment", required=True, help="Environment to render (an Environment on main).")
@click.option(
    "--output",
    "output",
    required=True,
    type=CommandPath(exists=False),
    help="The environment's output root (the GitOpsRepo path in a checkout of the GitOps branch).",
)
@click.option(
    "--full", is_flag=True, help="Re-render every assignment, even those whose inputs did not change."
)
@click.option(
    "--keep-last-good",
    is_flag=True,
    help="Invalid assignments keep their previous files; everything else is rendered; still exits 1.",
)
@click.option(
    "--prune-foreign",
    is_flag=True,
    help="Also delete files in cluster-type folders that fleetflow did not write (asks first on a terminal).",
)
@click.option("--yes", is_flag=True, help="Do not ask before --prune-foreign deletes (needed off a terminal).")
@click.option(
    "--main-commit", help="main commit recorded in state.json (default: HEAD of --main if a git repo)."
)
@click.option(
    "--env-commit", help="Environment-branch commit recorded in state.json (default: HEAD of --env)."
)
@FORMAT
def render(
    main_dir: Path,
    env_dir: Path,
    environment: str,
    output: Path,
    full: bool,
    keep_last_good: bool,
    prune_foreign: bool,
    yes: bool,
    main_commit: str | None,
    env_commit: str | None,
    fmt: str,
) -> None:
    """Write an environment's GitOps tree into a folder.

    Use it to render by hand into a checkout of the environment's GitOps branch (`fleetflow plan` first shows
    what it would change). The workflows do not need it: schedule and promote render and open the PR.

    \b
    Examples (cp-main, cp-dev: checkouts of main and of the dev branch; gitops-dev: of the GitOps repo's dev):
      fleetflow render --main cp-main --env cp-dev --environment dev --output gitops-dev
      fleetflow render --main cp-main --env cp-dev --environment dev --output gitops-dev --keep-last-good

    \b
    Writes <clusterType>/<target>/{reconciler,namespace,platform-config}.<ext> and the state: .fleetflow/
    state.json, its parts in .fleetflow/index/ and a shard per cluster type in .fleetflow/state/. Never
    commits or pushes. Incremental: when --output holds a previous state.json, only assignments whose
    inputs changed are rendered again, byte-identical to a full render; unchanged files are not rewritten.
    Nothing is written when any input is invalid (unless --keep-last-good).

    \b
    Only files fleetflow wrote (those the previous state.json lists) are ever deleted. Other files in
    cluster-type folders are kept and listed as not managed by fleetflow; --prune-foreign deletes them too.

    Exit 0 rendered, 1 invalid input (--keep-last-good: some assignments held back), 2 usage error (the
    table: fleetflow --help, docs/design.md section 6).
    """
    with handled(fmt, f"Nothing was written to {output}.") as reply:
        plane, previous, meta = render_start(main_dir, env_dir, environment, output, (main_commit, env_commit), fmt,
                                             reply)
        with trees_in_hints(main_dir, env_dir):
            result = render_environment(
                plane, environment, previous=previous, meta=meta, keep_last_good=keep_last_good, reuse=not full,
                progress=TERMINAL.progress(fmt),
            )
        owned = survey(output, result, previous, sweep=full or prune_foreign)
        in_the_way(output, result, owned)  # before the closing line below: nothing is written when it refuses
        unlisted = kustomization_warnings(output, result, owned)
        if prune_foreign and owned.foreign and not yes:
            _confirm_prune(output, owned.foreign)
        reply.written = (
            f"The render stopped while writing {output}: each file written is whole, and state.json was not "
            "updated, so the next render finishes the job."
        )
        report = apply_result(
            output, result, previous, sweep=full, prune_foreign=prune_foreign, owned=owned
        )
        for item in [*result.warnings, *unlisted]:
            reply.warn(item)

        def text() -> None:
            click.echo(f"Rendered {headline(result)}")
            for line in changes_text(result.changes):
                click.echo(line)
            click.echo(f"Wrote {len(report.written)} files, deleted {len(report.deleted)} in {output}")
            for path in report.written:
                TERMINAL.detail(f"  wrote {path}")
            for path in report.deleted:
                TERMINAL.detail(f"  deleted {path}")
            for line in foreign_lines(report.foreign, "kept"):
                click.echo(line)
            if result.problems:
                click.echo(
                    f"{len(result.problems)} invalid assignments kept their previous files (--keep-last-good)."
                )

        reply.done(
            RenderSummary(
                environment=environment,
                output=str(output),
                assignments=len(result.state.assignments),
                rendered=len(result.rendered),
                changes=result.changes,
                written=report.written,
                deleted=report.deleted,
                foreign=report.foreign,
            ),
            text,
            problems=result.problems,
        )


def render_start(
    main_dir: Path, env_dir: Path, environment: str, output: Path, commits: tuple[str | None, str | None], fmt: str,
    reply: Reply,
) -> tuple[ControlPlane, RenderState | None, Meta]:
    """What ``render`` and ``plan`` start from: both trees loaded, ``environment`` checked to be on main, the state
    the previous render left in ``output`` (an unreadable one is a warning: everything is rendered again), the
    commits of the two trees (``commits`` as given, else the checkouts' HEADs) and the branch checked out in
    ``env_dir`` (for the render's check that the tree is ``environment``'s)."""
    inside = output.resolve()
    for flag, tree in (("--main", main_dir), ("--env", env_dir)):
        if inside == tree.resolve() or tree.resolve() in inside.parents:
            # the next read of the tree would read the rendered manifests as its own documents (a bad-input hunt,
            # 2026-11-28: every later validate failed with dozens of unknown kinds)
            raise UsageError(f"--output {output} is inside {flag} {tree}: the rendered files would become part of "
                             "the control plane; give a folder outside it (a checkout of the GitOps branch)")
    plane = load(main_dir, env_dir, fmt)
    check_environment(plane, environment)
    check_output_branch(plane, environment, output)
    unreadable = Problems()
    previous = read_state(output, unreadable)
    other = previous.other_environment(environment, plane.environments) if previous is not None else None
    if other is not None:  # its files would be deleted as "no longer rendered" (until 2026-11-29)
        raise UsageError(Problem(
            f"--output {output} holds environment {other}'s render (its state names {other}), not {environment}'s: "
            f"rendering {environment} there would replace {other}'s files",
            None,
            f"give each environment its own --output folder (a checkout of its own GitOps branch or folder), or "
            f"pass --environment {other}",
        ))
    for warning in unreadable:
        reply.warn(warning)
    if previous is not None:
        edited = edited_in_checkout(output, previous)
        if edited is not None:
            reply.warn(edited)
    main_commit, env_commit = commits
    # the branch checked out in --env is evidence of whose tree it is, as for validate and explain: until
    # 2026-11-29 a checkout of qa's branch (its GitOpsRepo named after neither) rendered as dev's, exit 0
    return plane, previous, Meta(main_commit or head_commit(main_dir), env_commit or head_commit(env_dir),
                                 head_branch_name(env_dir))


def edited_in_checkout(output: Path, previous: RenderState) -> Problem | None:
    """In a git checkout, the files fleetflow wrote (``previous`` lists them) that differ from the commit that last
    wrote the state index (``git log -1 -- <output>/.fleetflow/state.json``), in a later commit or in the working
    tree: a hot-fix pulled from the GitOps branch, a file edited or deleted by hand. Their assignments (and status
    folders) are rendered again, so the render puts back what fleetflow renders, as ``schedule`` does on the GitOps
    branch (:func:`fleetflow.promotion.gitops.hand_edits`); the warning says which. Until 2026-11-29 ``render`` kept
    them while their inputs did not change ("0 changed, wrote 0 files", a deleted ``namespace.yaml`` stayed
    deleted) and ``plan`` said "no rendered file changes". Nothing is looked at when the state on disk is not the
    committed one (a render not committed yet: its own files differ from the commit), nor outside a checkout.
    Costs two git calls, the diff ``git diff <commit> -- <output>`` (what changed, from the index's stat data)."""
    top = checkout_top(output)
    if top is None:
        return None
    inside = posixpath.normpath(os.path.relpath(output.resolve(), top.resolve()).replace(os.sep, "/"))
    if inside.startswith(".."):
        return None
    prefix = "" if inside == "." else f"{inside}/"
    wrote = run_git(["log", "-1", "--format=%H", "--", f"{prefix}{STATE_PATH}"], cwd=top, check=False)
    since = wrote.stdout.decode().strip() if wrote.returncode == 0 else ""
    if not since:
        return None
    diff = run_git(["diff", "--name-only", "--no-renames", "-z", since, "--", inside], cwd=top, check=False)
    if diff.returncode != 0:
        return None
    changed = [path[len(prefix):] for path in diff.stdout.decode(errors="replace").split("\0") if path]
    if any(path.startswith(".fleetflow/") for path in changed):
        return None  # the state on disk is not the one committed: its render's own files differ from the commit
    changed = _differ_from(top, since, prefix, changed) if changed else []
    paths, assignments, reporters = previous.written_among(changed)
    if not paths:
        return None
    previous.render_again(assignments, reporters)
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    count = f"{len(paths)} file{'s' if len(paths) != 1 else ''}"
    return Problem(
        f"{count} fleetflow wrote changed in {output} after commit {since[:12]}, which wrote its state ({shown}): "
        "rendered again, render puts back what fleetflow renders",
        Location(str(output / paths[0])),
        "a change made in the GitOps tree is undone by the next render or schedule; make it in the control plane "
        "(main or the environment branch) to keep it",
    )


def _differ_from(top: Path, commit: str, prefix: str, paths: list[str]) -> list[str]:
    """Those of ``paths`` (below ``prefix`` in the checkout at ``top``) whose file on disk is missing or not the
    blob ``commit`` has: ``git diff <commit>`` also lists a file the index no longer has (deleted by a later
    commit) that the disk has again, as a render put it back. One ``git ls-tree``; the blob ids of the files on
    disk are computed here (:func:`fleetflow.render.diff.git_blob_id`)."""
    listed = run_git(["ls-tree", "-z", commit, "--", *(prefix + path for path in paths)], cwd=top, check=False)
    blobs: dict[str, str] = {}
    for line in listed.stdout.decode(errors="replace").split("\0"):
        meta, _, full = line.partition("\t")
        if full:
            blobs[full[len(prefix):]] = meta.split()[-1]
    differ: list[str] = []
    for path in paths:
        file = top / (prefix + path)
        blob = blobs.get(path)
        if blob is None or not file.is_file():
            differ.append(path)
            continue
        if git_blob_id(file.read_bytes(), "sha256" if len(blob) == 64 else "sha1") != blob:
            differ.append(path)
    return differ


def checkout_top(output: Path) -> Path | None:
    """The top folder of the git checkout ``output`` is in (the nearest folder above it, or itself, with a
    ``.git``), or None outside any."""
    here = output.absolute()
    return next((folder for folder in (here, *here.parents) if (folder / ".git").exists()), None)


def check_output_branch(plane: ControlPlane, environment: str, output: Path) -> None:
    """``--output`` in a checkout of the GitOps repo whose branch is another environment's (its name, the GitOps
    branch a GitOpsRepo takes by default): a usage error before anything is written. The state check above catches
    a checkout that holds another environment's render; until 2026-11-29 a fresh checkout of qa's branch took
    dev's render, exit 0, for the user to commit to qa's branch. Reads no git when no ``.git`` is above --output."""
    top = checkout_top(output)
    if top is None:
        return
    head = run_git(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=top, check=False)
    branch = head.stdout.decode().strip() if head.returncode == 0 else ""
    gitops = plane.gitops_repo()
    expected = gitops.spec.branch if gitops is not None and gitops.spec.branch else environment
    if branch in (expected, environment) or branch not in plane.environments:
        if gitops is not None:
            check_output_path(gitops, environment, output, top)
        return
    said = "the default: the environment's name"
    if gitops is not None:
        said = f"GitOpsRepo {gitops.name} at {gitops.where(*(('spec', 'branch') if gitops.spec.branch else ()))}"
    raise UsageError(Problem(
        f"--output {output} is in a checkout of branch {branch} ({top}), the branch named after environment "
        f"{branch}: {environment}'s GitOps output goes to branch {expected} ({said})",
        None,
        f"switch that checkout to branch {expected} (git -C {top} switch {expected}), give --output a checkout of "
        f"branch {expected}, or pass --environment {branch}",
    ))


def check_output_path(gitops: Resource[GitOpsRepoSpec], environment: str, output: Path, top: Path) -> None:
    """``--output`` in a checkout of the GitOps repo, but not at its ``GitOpsRepo.spec.path``: a usage error before
    anything is written. Flux reads a Kustomization's ``spec.path`` from the root of its source, the whole tree
    below it (fluxcd/kustomize-controller ``api/v1/kustomization_types.go``, ``Path``), Argo CD an Application's
    ``source.path`` "within the Git repository", and ``schedule`` writes the environment's files at the GitOpsRepo's
    path: until 2026-11-29 ``render --output <checkout>`` with ``path: clusters/dev`` wrote the tree at the top of
    the checkout (exit 0), for the user to commit where no reconciler reads it, beside the render ``schedule``
    keeps (a bad-input hunt). The checkout is taken for the GitOps repo when one of its remotes names the
    GitOpsRepo's repository, or when a fleetflow state stands at the GitOpsRepo's path in it; one ``git config``
    call, only when --output is in a git checkout."""
    folder = posixpath.normpath(gitops.spec.path.replace("\\", "/").strip("/") or ".")
    wanted = top / folder if folder != "." else top
    here = output.resolve()
    if here == wanted.resolve():
        return
    remotes = run_git(["config", "--get-regexp", r"^remote\..*\.url$"], cwd=top, check=False)
    urls = [line.split(" ", 1)[-1] for line in remotes.stdout.decode(errors="replace").splitlines()]
    if _repo_name(gitops.spec.repo) not in {_repo_name(url) for url in urls} and \
            not (wanted / STATE_PATH).is_file():
        return
    inside = here.relative_to(top.resolve()).as_posix() if top.resolve() in (here, *here.parents) else None
    place = "the top" if inside == "." else f"folder {inside}" if inside else "a folder"
    said = (f"in its folder {folder} ({gitops.where('spec', 'path')})" if folder != "." else
            f"at the top of the repo (it has no spec.path: {gitops.where('metadata', 'name')})")
    shown = wanted if output.is_absolute() else Path(os.path.relpath(wanted))
    raise UsageError(Problem(
        f"--output {output} is {place} of a checkout of the GitOps repo {gitops.spec.repo} ({top}), but GitOpsRepo "
        f"{gitops.name} puts {environment}'s files {said}: Flux and Argo CD read them there, and schedule writes "
        "them there",
        None,
        f"give --output {shown}",
    ))


def _repo_name(url: str) -> str:
    """The repository's name in a git URL, an ``owner/name`` or a path (``https://host/o/gitops.git``,
    ``git@host:o/gitops``, ``/srv/gitops.git/`` are all ``gitops``), for telling whether a checkout is a clone of
    the GitOps repo."""
    last = re.split(r"[/:\\]", url.strip().rstrip("/\\"))[-1]
    return last.removesuffix(".git").lower()


@contextmanager
def trees_in_hints(main_dir: Path, env_dir: Path) -> Iterator[None]:
    """A render's problems with the folders given written into their hints' commands (:func:`trees_named`), for
    ``render`` and ``plan``: a command the user can paste."""
    try:
        yield
    except InputError as exc:
        raise InputError(trees_named(exc.problems(), str(main_dir), str(env_dir))) from None


def foreign_lines(paths: list[str], verb: str, limit: int = 20) -> list[str]:
    """The foreign files, as a short list for people (every one of them is in the JSON output)."""
    if not paths:
        return []
    files = "file" if len(paths) == 1 else "files"
    lines = [f"{verb[0].upper()}{verb[1:]} {len(paths)} {files} not managed by fleetflow (not in its state):"]
    lines += [f"  {shown_path(path)}" for path in paths[:limit]]
    if len(paths) > limit:
        lines.append(f"  … and {len(paths) - limit} more (--format json lists them all)")
    return lines


def _confirm_prune(output: Path, foreign: list[str]) -> None:
    """--prune-foreign deletes what fleetflow did not write: ask on a terminal, refuse elsewhere without --yes."""
    if not sys.stdin.isatty():
        raise UsageError(
            f"--prune-foreign would delete {len(foreign)} files fleetflow did not write in {output} "
            f"(e.g. {foreign[0]}); pass --yes to confirm when not on a terminal"
        )
    for line in foreign_lines(foreign, "found"):
        click.echo(line, err=True)
    if not click.confirm(f"Delete these {len(foreign)} files?", default=False, err=True):
        raise UsageError("--prune-foreign not confirmed")
