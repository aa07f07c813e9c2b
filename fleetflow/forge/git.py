"""The one git layer: every git command fleetflow runs, its errors and its retries.

* **One way to run git**: :func:`run_git` (``subprocess``, no shell). Git never inherits a location from the
  environment (``GIT_DIR`` and friends are dropped), never prompts, and speaks C-locale English so its reasons can
  be matched. A failure is a :class:`~fleetflow.errors.GitError` carrying the command and git's own reason.
* **One kind of repository**: :class:`BareRepo`, a bare repository in a folder (made aside and renamed, so runs
  sharing a cache may race to create it). Reading (trees, blobs, ancestry), writing objects (blobs, trees, commits:
  plumbing only, no index, no work tree), fetching and pushing with compare-and-swap all live there.
* **One retry helper**: :func:`retry_races` (tenacity) runs a read-modify-push step again when it lost a race
  (:class:`PushRejected`: the lease saw another writer's push, or the remote's ref lock was taken).
* **Credentials** in an ``https://user:token@host/...`` URL leave the URL for an ``http.extraheader`` in the
  environment of the one git process that talks to that host: never on a command line, never in a message or a
  cache key. **User text never reaches an option**: URLs and paths go after ``--`` or inside ``rev:path``, ref
  names are checked (:func:`check_ref`), and messages travel on stdin.

:class:`GitRepos` is the promotion side's view: one mirror per repository URL in a cache folder, fetched by
explicit refspecs into ``refs/mirror/*``, commits with a fixed identity and dates derived from the inputs (same
inputs, same sha: a re-run pushes nothing new).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import tenacity

from fleetflow.errors import GitError
from fleetflow.model.resources import unsafe_branch

T = TypeVar("T")

FLEETFLOW_NAME = "fleetflow"
FLEETFLOW_EMAIL = "fleetflow@users.noreply.github.com"
MIRROR_PREFIX = "refs/mirror/"
# The one remote of a blobless mirror: git's partial clone needs a named promisor remote (extensions.partialClone).
PROMISOR = "origin"
BLOBLESS = "blob:none"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Variables that would point git at another repository than the one we name (e.g. when run from a git hook).
_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
                  "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX")
# Push rejections that mean "someone else wrote first (or is writing: the remote's ref lock was taken)".
_RACES = ("stale info", "fetch first", "non-fast-forward", "atomic push failed", "failed to update ref",
          "failed to lock", "cannot lock ref")


class PushRejected(GitError):
    """A compare-and-swap lost a race: the remote ref moved since we read it (or another writer holds its lock).
    Re-read and apply again (:func:`retry_races`)."""


# -- running git ---------------------------------------------------------------------------------------------


def scrub(text: str) -> str:
    """``text`` with any ``user:password@`` of a URL masked."""
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def git_reason(stderr: bytes | str) -> str:
    """The line of git's stderr that says why (its first ``fatal:``/``error:`` line), credentials masked."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return scrub((fatal or lines or ["git failed"])[0])


REMOTE_LINES = 20  # at most this many of the remote's lines go into an error


def remote_said(stderr: bytes | str) -> list[str]:
    """What the remote wrote to us (git prints it as ``remote: ...`` lines): a server hook's or GitHub's reason
    for declining a push (a ruleset's rule, a protected branch), or the text of an HTTP error (a token that may
    not push or read), credentials masked, blank lines and terminal escapes left out, at most
    :data:`REMOTE_LINES` of them."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    found = []
    for line in text.splitlines():
        if line.startswith("remote:"):
            said = scrub(re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", line[len("remote:"):]).strip())
            if said:
                found.append(said)
    return found[:REMOTE_LINES] + ([f"... ({len(found) - REMOTE_LINES} more lines)"] if len(found) > REMOTE_LINES
                                   else [])


def remote_told(stderr: bytes | str) -> str:
    """What an error message adds for :func:`remote_said`'s lines: ``"; the remote said:"`` and one indented
    line each, or nothing when the remote said nothing."""
    said = remote_said(stderr)
    return "; the remote said:" + "".join(f"\n    {line}" for line in said) if said else ""


def ref_labels(refs: Iterable[str]) -> str:
    """Full ref names as a message names them: ``branch main``, ``tag v1``, ``refs/notes/x``."""
    labels = []
    for ref in refs:
        if ref.startswith("refs/heads/"):
            labels.append(f"branch {ref.removeprefix('refs/heads/')}")
        elif ref.startswith("refs/tags/"):
            labels.append(f"tag {ref.removeprefix('refs/tags/')}")
        else:
            labels.append(ref)
    return ", ".join(labels)


# How GitHub declines a push, and what fixes it: (words GitHub prints, the fix). The words as GitHub's pushes print
# them (cited in tests/ghstub/pushrefusals.py and tests/test_forge_github.py): branch protection "GH006: Protected
# branch update failed", a ruleset "GH013: Repository rule violations found", a file over 100 MiB "GH001: Large
# files detected" (GitHub Docs, "About large files on GitHub"), a GitHub App's token (a workflow's GITHUB_TOKEN is
# one) changing .github/workflows/ without the workflows permission, and a token that may not push at all (an HTTP
# 403 whose body says "Permission to <owner>/<repo>.git denied to <account>").
_PUSH_REFUSALS: tuple[tuple[str, str], ...] = (
    ("GH006", "branch protection declined it (GitHub's GH006, its rule quoted above): fleetflow writes {what} "
              "itself, so leave it out of the protection rule's branch name pattern, or let fleetflow's GitHub App "
              "(or the token's user) bypass the rule (the repository's Settings → Branches)"),
    ("GH013", "a ruleset declined it (GitHub's GH013, its rule quoted above): leave {what} out of the ruleset's "
              "target, or add fleetflow's GitHub App to its bypass list (the repository's or organization's "
              "Settings → Rules → Rulesets)"),
    ("without `workflows` permission", "changing a file under .github/workflows/ needs the Workflows permission, "
              "which a workflow's GITHUB_TOKEN cannot have: give fleetflow a GitHub App with Workflows: read and "
              "write (accepted on its installation), or a token with the workflow scope"),
    ("GH001", "GitHub refuses files over 100 MiB (GH001, the file named above): make that file smaller (render "
              "its manifests into several files) or keep it out of the repository"),
    ("Permission to ", "the credentials may not push to this repository: they need contents: write (a workflow's "
              "GITHUB_TOKEN: `permissions: contents: write` on the job; a GitHub App: Contents: read and write, "
              "accepted on its installation)"),
)


def push_refusal_fix(what: str, said: str) -> str | None:
    """The fix for a push GitHub declined, from its words (``said``: git's reasons and the remote's lines) and the
    refs pushed (``what``, :func:`ref_labels`); None when the words are not GitHub's."""
    for words, fix in _PUSH_REFUSALS:
        if words in said:
            return fix.format(what=what)
    return None


def remote_failure(command: str, url: str, stderr: bytes, *, locks_race: bool = False) -> GitError:
    """The error of a failed ``git <command>`` against ``url``: git's reason and what the remote said, naming the
    URL without credentials. ``locks_race``: a ref lock held by another run is a :class:`PushRejected` (a race,
    retried), not a failure."""
    reason = git_reason(stderr)
    error = PushRejected if locks_race and "lock" in reason else GitError
    return error(f"git {command} failed for {scrub(split_credentials(url)[0])}: {reason}{remote_told(stderr)}",
                 command=command, reason=reason)


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARS}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANGUAGE="C", GIT_LITERAL_PATHSPECS="1")
    env.update(extra or {})
    return env


FAST_IMPORT_TRIM_THRESHOLD = 4 << 20
"""Bytes of freed memory glibc's allocator may keep at the top of ``git fast-import``'s heap (its default: 128 KiB,
adjusted as the process goes; the GNU C Library manual, "Malloc Tunable Parameters", M_TRIM_THRESHOLD and its
environment variable ``MALLOC_TRIM_THRESHOLD_``). With the default, fast-import gives the memory it used to write one
object back to the system and asks for it again for the next: four ``brk`` calls and fresh pages an object (8,104
``brk`` for 2,000 new blobs, ``strace -c``); 30,000 new blobs took 2.1 s instead of 0.3 s from the shell on this
project's machine, 2.2-2.4 s instead of 0.5-0.6 s through :meth:`BareRepo.fast_commit` (``python
benchmarks/bench_tree_write.py --cluster-types 100``). It only keeps freed memory for reuse; other C libraries ignore
the variable. Set at all, the threshold is fixed (the manual: "the dynamic adjustment is disabled"), which suits a
process that writes object after object but not fleetflow's own: only fast-import gets it."""


def fast_import_env() -> dict[str, str]:
    """The environment ``git fast-import`` runs with beyond :func:`git_env`: :data:`FAST_IMPORT_TRIM_THRESHOLD`,
    unless the user set ``MALLOC_TRIM_THRESHOLD_`` (theirs is kept)."""
    if "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return {}
    return {"MALLOC_TRIM_THRESHOLD_": str(FAST_IMPORT_TRIM_THRESHOLD)}


def run_git(args: Sequence[str], *, git_dir: Path | None = None, cwd: Path | None = None,
            stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run ``git [--git-dir=git_dir] args``; with ``check``, a failure raises :class:`GitError` with git's reason."""
    argv = ["git", *([f"--git-dir={git_dir}"] if git_dir is not None else []), *args]
    try:
        proc = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, env=git_env(env), check=False)
    except OSError as exc:  # git missing, cwd gone
        raise GitError(f"cannot run git {args[0]}: {exc}", command=args[0], reason=str(exc)) from None
    if check and proc.returncode != 0:
        reason = git_reason(proc.stderr)
        raise GitError(f"git {args[0]} failed: {reason}", command=args[0], reason=reason)
    return proc


@cache
def git_version() -> tuple[int, int]:
    found = re.search(rb"(\d+)\.(\d+)", run_git(["version"]).stdout)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def has_merge_tree() -> bool:
    """``git merge-tree --write-tree`` exists from git 2.38 on."""
    return git_version() >= (2, 38)


def check_ref(name: str) -> str:
    """A branch name that is safe on a command line (no leading '-', no '..', plain characters: the rule the
    resources' branch fields are checked by, :func:`fleetflow.model.resources.unsafe_branch`)."""
    reason = unsafe_branch(name)
    if reason is not None:
        raise GitError(f"unsafe branch name: {reason}")
    return name


def split_credentials(url: str) -> tuple[str, dict[str, str]]:
    """``https://user:token@host/x`` → (``https://host/x``, env that makes git send the credentials as an HTTP
    header). Keeps tokens off git's command line (process lists) and out of cache keys (tokens rotate)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return url, {}
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    count = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    return clean, {
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": f"http.{parts.scheme}://{host}/.extraheader",
        f"GIT_CONFIG_VALUE_{count}": f"AUTHORIZATION: basic {token}",
    }


# -- retrying a compare-and-swap ----------------------------------------------------------------------------


def retry_races(step: Callable[[], T], attempts: int, *, on: type[BaseException] = PushRejected,
                max_wait: float = 1.0) -> T:
    """Run ``step`` (read, compute, push with a lease) until it does not raise ``on``, at most ``attempts`` times,
    waiting a random, exponentially growing time between attempts (full jitter: writers that collided do not
    collide again in lockstep). The last attempt's error is raised as is."""
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(on),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_random_exponential(multiplier=0.02, max=max_wait),
        reraise=True,
    )
    return retrying(step)


# -- a bare repository ---------------------------------------------------------------------------------------


SYMLINK_MODE = "120000"  # a tree entry that is a symbolic link (never followed, never written)


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    kind: str  # "blob", "tree" or "commit"
    sha: str
    path: str


class BareRepo:
    """A bare repository in ``folder`` (created when missing). All reading and writing of git objects.

    ``blobless_from`` (a URL): when the folder is created here, it is made a **partial clone** of that URL (git's
    ``Documentation/technical/partial-clone.adoc``): remote ``origin`` with ``remote.origin.promisor = true`` and
    ``remote.origin.partialclonefilter = blob:none``, and ``extensions.partialClone = origin``. Its fetches then
    bring commits and trees only (``git fetch --filter=blob:none``); the blobs a reader asks for are fetched in one
    batch (:meth:`blobs`), never one request per blob as git's on-demand ("dynamic") fetch would. A folder that
    already exists keeps what it is (a full mirror stays full)."""

    def __init__(self, folder: Path, *, blobless_from: str | None = None) -> None:
        self.folder = folder = folder.absolute()
        self._blobs: dict[str, bytes] = {}
        self._partial: bool | None = None
        self.remote_url: str | None = None  # the URL (credentials included, memory only) that promised the blobs
        if not (folder / "HEAD").exists():  # made aside and renamed: runs sharing the cache may race here
            folder.parent.mkdir(parents=True, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=".new-", dir=folder.parent)
            try:
                run_git(["init", "--quiet", "--bare", tmp])
                if blobless_from is not None:
                    _make_partial(Path(tmp), split_credentials(blobless_from)[0])
                os.rename(tmp, folder)
            except OSError:
                if not (folder / "HEAD").exists():
                    raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    def git(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess[bytes]:
        if env is None and self.remote_url is not None and self.partial:
            env = split_credentials(self.remote_url)[1]  # a read git fetches on demand authenticates too
        return run_git(args, git_dir=self.folder, stdin=stdin, env=env, check=check)

    @property
    def partial(self) -> bool:
        """True for a partial clone (blobs come from the promisor remote when read)."""
        if self._partial is None:
            proc = run_git(["config", "--bool", "--get", f"remote.{PROMISOR}.promisor"], git_dir=self.folder,
                           check=False)
            self._partial = proc.stdout.decode().strip() == "true"
        return self._partial

    def out(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None) -> str:
        return self.git(*args, stdin=stdin, env=env).stdout.decode().strip()

    # -- talking to a remote ---------------------------------------------------------------------------------

    def remote(self, url: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """``git <args> -- <url> ...``: the literal ``url`` in ``args`` is replaced by its form without
        credentials, which travel in the environment. Failures name the clean URL only."""
        clean, auth = split_credentials(url)
        argv = [clean if a == url else a for a in args]
        proc = self.git(*argv, env=auth, check=False)
        if check and proc.returncode != 0:
            raise remote_failure(args[0], url, proc.stderr)
        return proc

    def ls_remote_heads(self, url: str) -> dict[str, str]:
        """Branch -> sha on the remote."""
        listing = self.remote(url, "ls-remote", "--heads", "--", url).stdout.decode()
        heads: dict[str, str] = {}
        for line in listing.splitlines():
            sha, _, ref = line.partition("\t")
            heads[ref.removeprefix("refs/heads/")] = sha
        return heads

    def ls_remote(self, url: str, patterns: Sequence[str]) -> dict[str, str]:
        """Full ref name -> sha on the remote for the refs matching ``patterns`` (``git ls-remote`` patterns: a ref
        matches when its name ends with the pattern, ``*`` allowed). One round trip, nothing fetched."""
        listing = self.remote(url, "ls-remote", "--", url, *patterns).stdout.decode()
        refs: dict[str, str] = {}
        for line in listing.splitlines():
            sha, _, ref = line.partition("\t")
            if ref:
                refs[ref] = sha
        return refs

    def ls_remote_pulls(self, url: str) -> dict[int, str]:
        """Pull request number -> the sha of ``refs/pull/<N>/head`` on the remote: the read-only ref GitHub keeps for
        every pull request, open or closed, following its head branch while it is open ("Checking out pull requests
        locally": ``git fetch origin pull/ID/head``). Empty on a remote without such refs (the local forge)."""
        return pull_refs(self.ls_remote(url, [PULL_HEADS]))

    def fetch(self, url: str, refspecs: Sequence[str], *, prune: bool = False, attempts: int = 3) -> None:
        """Fetch ``refspecs``; two runs sharing a cache may race for the mirror's ref locks (retried). A partial
        clone fetches from its promisor remote by name, without blobs (``--filter=blob:none``); the remote's URL is
        kept current (a mirror is one per URL, so only its credentials can change, and those stay in memory)."""
        if self.partial:
            self._set_promisor(url)

        def once() -> None:
            source = [f"--filter={BLOBLESS}", PROMISOR] if self.partial else ["--", url]
            args = ["fetch", "--quiet", "--no-tags", *(["--prune"] if prune else []), *source, *refspecs]
            proc = self.remote(url, *args, check=False)
            if proc.returncode != 0:
                raise remote_failure("fetch", url, proc.stderr, locks_race=True)

        retry_races(once, attempts, max_wait=0.2)

    def push(self, url: str, updates: Mapping[str, tuple[str, str]]) -> None:
        """Set each ``ref`` to ``new`` if it still is ``old`` ("" = must not exist), all or nothing.

        Raises :class:`PushRejected` when every rejection is a lost race, :class:`GitError` otherwise. (``git push``
        exits non-zero on any rejected ref; ``--porcelain`` gives one ``!`` line with the reason per ref.)"""
        leases = [f"--force-with-lease={ref}:{old}" for ref, (_, old) in updates.items()]
        specs = [f"{new}:{ref}" for ref, (new, _) in updates.items()]
        atomic = ["--atomic"] if len(updates) > 1 else []
        proc = self.remote(url, "push", "--porcelain", *atomic, *leases, "--", url, *specs, check=False)
        if proc.returncode == 0:
            return
        text = proc.stdout.decode(errors="replace")
        reasons = [line.split("\t")[-1] for line in text.splitlines() if line.startswith("!\t")]
        clean = scrub(split_credentials(url)[0])
        if reasons and all(any(r in reason for r in _RACES) for reason in reasons):
            raise PushRejected(f"{', '.join(updates)} moved on {clean} while fleetflow worked ({reasons[0]})",
                               command="push", reason=reasons[0])
        final = [r for r in reasons if not any(k in r for k in _RACES)]
        reason = final[0] if final else git_reason(proc.stderr)
        # why a hook, a rule or a refused token declined it: git's reason alone does not say; one push is all or
        # nothing (one ref, or --atomic), so no ref moved
        what = ref_labels(updates)
        fix = push_refusal_fix(what, "\n".join([*reasons, *remote_said(proc.stderr), reason]))
        raise GitError(f"git push of {what} to {clean} failed, no ref moved: {reason}{remote_told(proc.stderr)}"
                       + (f"\nhint: {fix}" if fix else ""), command="push", reason=reason)

    # -- reading -------------------------------------------------------------------------------------------

    def refs(self, prefix: str) -> dict[str, str]:
        listing = self.out("for-each-ref", "--format=%(objectname) %(refname)", prefix)
        return {ref: sha for sha, _, ref in (line.partition(" ") for line in listing.splitlines())}

    def resolve(self, rev: str) -> str | None:
        proc = self.git("rev-parse", "--verify", "--quiet", "--end-of-options", rev, check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def has_commit(self, sha: str) -> bool:
        return self.git("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.git("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def commit_time(self, sha: str) -> int:
        return int(self.out("show", "-s", "--format=%ct", sha))

    def log(self, sha: str, path: str | None = None, limit: int = 200, *, first_parent: bool = False) -> list[str]:
        args = ["log", "--format=%H", f"--max-count={limit}", *(["--first-parent"] if first_parent else []), sha]
        if path:
            args += ["--", path]
        return [line for line in self.out(*args).splitlines() if line]

    def ls_tree(self, rev: str, paths: Sequence[str] = (), *, recursive: bool = False,
                trees: bool = True) -> list[TreeEntry]:
        """Entries of ``rev``'s tree (``paths``: only those, or the content of those folders when they end with
        '/'). ``recursive`` walks into folders, listing the folders too unless ``trees`` is False."""
        args = ["ls-tree", "-z", "--full-tree"]
        if recursive:
            args += ["-r", *(["-t"] if trees else [])]
        out = self.git(*args, rev, "--", *paths).stdout
        found = []
        for item in out.split(b"\0"):
            if item:
                info, path = _name(item).split("\t", 1)
                mode, kind, sha = info.split(" ")
                found.append(TreeEntry(mode, kind, sha, path))
        return found

    def listings(self, rev: str, folders: Sequence[str]) -> dict[str, list[TreeEntry] | None]:
        """What lies directly in each of ``folders`` of ``rev``'s tree (None: no such folder; ``""``: the root), from
        two ``cat-file --batch``: the root tree, then each folder as ``<id>:<rest>`` (gitrevisions), ``<id>`` being
        the tree of its top folder. Asking ``<rev>:<folder>`` instead re-reads the root tree for every folder (2,000
        folders under a root of 1,000 cluster types: 0.2 s of re-inflating it); reading the top folders to walk down
        by ids costs parsing all they hold; ``ls-tree`` with one pathspec per folder costs the tree's entries times
        the pathspecs. Trees are present in a blobless mirror too (only blobs are left out)."""
        names = [f.strip("/") for f in folders]
        if not names:
            return {}
        if any("\n" in n for n in names):
            raise ValueError(f"not a folder path: {names!r}")
        root = f"{rev}^{{tree}}"
        root_body = self._trees([root]).get(root)
        tops = {} if root_body is None else {e.path: e.sha for e in _tree_entries(root_body, "") if e.kind == "tree"}
        asks: dict[str, str] = {}  # folder -> what cat-file is asked
        for name in names:
            if not name:  # the root itself
                continue
            top, _, rest = name.partition("/")
            if top in tops and not _dotted(rest):
                asks[name] = f"{tops[top]}:{rest}" if rest else tops[top]
        bodies = self._trees(list(asks.values()))
        found: dict[str, list[TreeEntry] | None] = {}
        for name in names:
            if not name:
                found[name] = None if root_body is None else _tree_entries(root_body, "")
                continue
            body = bodies.get(asks[name]) if name in asks else None
            found[name] = None if body is None else _tree_entries(body, name)
        return found

    def _trees(self, revs: Sequence[str]) -> dict[str, bytes]:
        """The raw bodies of the trees ``revs`` name (object ids, or ``<rev>^{tree}``), from one ``cat-file
        --batch``; a name that is missing or not a tree is left out."""
        unique = list(dict.fromkeys(revs))
        if not unique:
            return {}
        out = self.git("cat-file", "--batch", stdin=b"".join(_raw(f"{r}\n") for r in unique)).stdout
        bodies: dict[str, bytes] = {}
        pos = 0
        for rev in unique:
            end = out.index(b"\n", pos)
            header = out[pos:end].split(b" ")
            if len(header) != 3:  # "<name> missing" (or "ambiguous")
                pos = end + 1
                continue
            size = int(header[2])
            if header[1] == b"tree":
                bodies[rev] = out[end + 1:end + 1 + size]
            pos = end + 1 + size + 1
        return bodies

    def _set_promisor(self, url: str) -> None:
        self.remote_url = url
        clean = split_credentials(url)[0]
        if self.git("config", "--get", f"remote.{PROMISOR}.url", check=False).stdout.decode().strip() != clean:
            self.git("config", f"remote.{PROMISOR}.url", clean)

    def absent(self, shas: Iterable[str]) -> list[str]:
        """Which of ``shas`` are not in the local object store (promised by the remote, not fetched yet). Asks
        ``git rev-list --missing=allow-any --ignore-missing``, which never fetches on demand: it lists the objects
        that are present, and the rest are absent."""
        wanted = sorted(set(shas))
        if not wanted or not self.partial:
            return []
        proc = self.git("rev-list", "--objects", "--no-walk", "--ignore-missing", "--missing=allow-any", "--stdin",
                        stdin="".join(f"{s}\n" for s in wanted).encode())
        present = {line.split(" ", 1)[0].strip() for line in proc.stdout.decode().splitlines()}
        return [s for s in wanted if s not in present]

    def fetch_blobs(self, shas: Iterable[str]) -> int:
        """Fetch the absent ones of ``shas`` from the promisor remote in **one** request (what git itself runs to
        bulk-prefetch: ``fetch <remote> --filter=blob:none --stdin`` with the ids on stdin and the ``noop``
        negotiation). Credentials travel in the environment. Returns how many were fetched."""
        absent = self.absent(shas)
        if not absent:
            return 0
        url = self.remote_url
        auth = split_credentials(url)[1] if url else {}
        args = ["-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                "--recurse-submodules=no", f"--filter={BLOBLESS}", "--stdin", PROMISOR]
        proc = self.git(*args, stdin="".join(f"{s}\n" for s in absent).encode(), env=auth, check=False)
        if proc.returncode != 0:
            reason = git_reason(proc.stderr)
            where = scrub(split_credentials(url)[0]) if url else PROMISOR
            raise GitError(f"git fetch of {len(absent)} file(s) from {where} failed: {reason}", command="fetch",
                           reason=reason)
        return len(absent)

    def blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Contents of blobs by id (cached: an id names its content), read with one ``cat-file --batch``. In a
        partial clone the absent ones are fetched first, in one batch (:meth:`fetch_blobs`)."""
        wanted = list(shas)
        missing = sorted({s for s in wanted if s not in self._blobs})
        if missing and self.partial:
            self.fetch_blobs(missing)
        if missing:
            out = self.git("cat-file", "--batch", stdin="".join(f"{s}\n" for s in missing).encode()).stdout
            pos = 0
            for sha in missing:
                end = out.index(b"\n", pos)
                header = out[pos:end].split(b" ")
                if len(header) != 3:
                    raise GitError(f"git cat-file: {out[pos:end].decode(errors='replace')}", command="cat-file")
                size = int(header[2])
                self._blobs[sha] = out[end + 1:end + 1 + size]
                pos = end + 1 + size + 1
        return {s: self._blobs[s] for s in wanted}

    def read_file(self, rev: str, path: str) -> bytes | None:
        """The bytes of ``path`` in ``rev``'s tree; None when there is no such file."""
        clean = "/".join(part for part in path.split("/") if part not in ("", "."))
        if self.partial:  # the tree says which blob; then one batched fetch (with credentials) if it is absent
            try:
                found = [e for e in self.ls_tree(rev, [clean]) if e.path == clean] if clean else []
            except GitError:  # no such revision: no such file, as cat-file answers below
                return None
            if not found or found[0].kind != "blob":
                return None
            return self.blobs([found[0].sha])[found[0].sha]
        proc = self.git("cat-file", "blob", f"{rev}:{clean}", check=False)
        return proc.stdout if proc.returncode == 0 else None

    def read_files(self, rev: str, paths: Sequence[str]) -> dict[str, bytes | None]:
        """The bytes of each of ``paths`` in ``rev``'s tree (None: no such file), from one ``ls-tree`` and one
        ``cat-file --batch``: in a blobless mirror, one fetch for all of them (reading many small files, such as
        state shards, one by one would cost a request each)."""
        clean = {p: "/".join(part for part in p.split("/") if part not in ("", ".")) for p in paths}
        wanted = sorted({c for c in clean.values() if c})
        found = {e.path: e for e in self.ls_tree(rev, wanted) if e.kind == "blob"} if wanted else {}
        data = self.blobs(e.sha for e in found.values())
        return {p: data[found[c].sha] if c in found else None for p, c in clean.items()}

    def regular_files(self, rev: str) -> list[TreeEntry]:
        """Every file of ``rev``'s tree, at any depth: its blobs but symbolic links (never followed) and submodules
        (``commit`` entries). What :meth:`export` writes and what the control plane is read from
        (``fleetflow.promotion.context.CommitTree``)."""
        return [e for e in self.ls_tree(rev, recursive=True, trees=False)
                if e.kind == "blob" and e.mode != SYMLINK_MODE]

    def export(self, rev: str, dest: Path) -> Path:
        """Write the files of ``rev``'s tree into ``dest`` (created). Symbolic links are never written."""
        dest.mkdir(parents=True, exist_ok=True)
        entries = self.regular_files(rev)
        data = self.blobs(e.sha for e in entries)
        for entry in entries:
            target = dest / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data[entry.sha])
        return dest

    # -- writing objects -----------------------------------------------------------------------------------

    def hash_blob(self, data: bytes) -> str:
        sha = self.out("hash-object", "-w", "--stdin", stdin=data)
        self._blobs[sha] = data
        return sha

    def mktree(self, entries: Iterable[tuple[str, str, str, str]]) -> str:
        """A tree from (mode, kind, sha, name) entries."""
        lines = "".join(f"{mode} {kind} {sha}\t{name}\n" for mode, kind, sha, name in sorted(entries, key=_tree_key))
        return self.out("mktree", stdin=lines.encode())

    def commit_tree(self, tree: str, parents: Sequence[str], message: str, identity: tuple[str, str],
                    when: int) -> str:
        """A commit with a fixed identity and date (same inputs, same sha). The message goes on stdin."""
        args = ["commit-tree", "--no-gpg-sign", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.out(*args, stdin=message.encode(), env=commit_env(identity, when))

    def fast_commit(self, parent: str | None, edits: Iterable[TreeEdit], message: str, identity: tuple[str, str],
                    when: int) -> str:
        """A commit whose tree is ``parent``'s with ``edits`` applied, written by one ``git fast-import``. It loads
        only the trees along edited paths and keeps every other subtree by id, so the cost follows the edits, not
        the size of the tree. Nothing is checked out and no ref moves (the scratch ref fast-import needs is removed
        again); the commit's id comes back through ``get-mark``."""
        scratch = f"refs/fleetflow-scratch/{os.getpid()}-{uuid.uuid4().hex}"
        name, email = identity
        head = [b"feature done\n", f"commit {scratch}\nmark :1\n".encode(), _who(b"author", name, email, when),
                _who(b"committer", name, email, when), _data(message.encode())]
        if parent is not None:
            head.append(f"from {parent}\n".encode())
        argv = ["git", f"--git-dir={self.folder}", "fast-import", "--quiet", "--date-format=raw"]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=git_env(fast_import_env()))
        assert proc.stdin is not None
        try:
            try:
                buffer = bytearray(b"".join(head))
                for edit in edits:
                    path = _quote(edit.path)
                    if edit.tree is not None:
                        buffer += f"M 040000 {edit.tree} ".encode() + path + b"\n"
                    elif edit.blob is not None:
                        buffer += f"M 100644 {edit.blob} ".encode() + path + b"\n"
                    elif edit.data is None:
                        buffer += b"D " + path + b"\n"
                    else:
                        buffer += b"M 100644 inline " + path + b"\n" + _data(edit.data)
                    if len(buffer) > 1 << 20:
                        proc.stdin.write(buffer)
                        buffer.clear()
                buffer += b"\nget-mark :1\ndone\n"
                proc.stdin.write(buffer)
            except BrokenPipeError:
                pass  # fast-import stopped early: its reason is on stderr
            out, err = proc.communicate()
            if proc.returncode != 0:
                reason = git_reason(err)
                raise GitError(f"git fast-import failed: {reason}", command="fast-import", reason=reason)
        finally:
            if proc.returncode is None:
                proc.kill()
                proc.wait()
            self.git("update-ref", "-d", scratch, check=False)
        return out.decode().strip()

    def tree_of(self, commit: str) -> str:
        return self.out("rev-parse", f"{commit}^{{tree}}")

    def changed_paths(self, old: str | None, new: str) -> list[str]:
        """Files that differ between two commits or trees (``old`` None: every file of ``new``). Unchanged
        subtrees are skipped by id, so this costs what changed."""
        args = ["diff-tree", "-r", "-z", "--no-commit-id", "--name-only", "--no-renames"]
        out = self.git(*args, old or EMPTY_TREE, new).stdout
        return [_name(p) for p in out.split(b"\0") if p]

    # -- merging -------------------------------------------------------------------------------------------

    def merge_tree(self, base: str, head: str) -> str:
        """The tree of merging ``head`` into ``base``; :class:`MergeConflict` when git cannot do it alone."""
        if not has_merge_tree():
            return self._merge_in_worktree(base, head)
        proc = self.git("merge-tree", "--write-tree", "--name-only", "--no-messages", base, head, check=False)
        lines = proc.stdout.decode("utf-8", "backslashreplace").splitlines()  # a tree id, then names for messages
        if proc.returncode == 0:
            return lines[0]
        if proc.returncode == 1:
            raise MergeConflict([line for line in lines[1:] if line])
        raise GitError(f"git merge-tree failed: {git_reason(proc.stderr)}", command="merge-tree")

    def _merge_in_worktree(self, base: str, head: str) -> str:
        """For git < 2.38: merge in a throw-away work tree of the repository."""
        with tempfile.TemporaryDirectory(prefix="fleetflow-merge-") as tmp:
            work = Path(tmp) / "work"
            self.git("worktree", "add", "--quiet", "--detach", str(work), base)
            try:
                args = ["merge", "--quiet", "--no-ff", "--no-commit", "--no-edit", head]
                env = {"GIT_AUTHOR_NAME": FLEETFLOW_NAME, "GIT_AUTHOR_EMAIL": FLEETFLOW_EMAIL,
                       "GIT_COMMITTER_NAME": FLEETFLOW_NAME, "GIT_COMMITTER_EMAIL": FLEETFLOW_EMAIL}
                proc = run_git(args, cwd=work, env=env, check=False)
                if proc.returncode != 0:
                    unmerged = run_git(["diff", "--name-only", "--diff-filter=U"], cwd=work, check=False)
                    raise MergeConflict(unmerged.stdout.decode().split() or [git_reason(proc.stdout + proc.stderr)])
                return run_git(["write-tree"], cwd=work).stdout.decode().strip()
            finally:
                self.git("worktree", "remove", "--force", str(work), check=False)
                self.git("worktree", "prune", check=False)


@dataclass(frozen=True)
class TreeEdit:
    """One edit of a tree: write ``data`` at ``path`` (mode 100644), or put an object the repository already has
    there (``tree``: a folder, ``blob``: a file, by id), or delete ``path`` (a file or a whole folder) when none is
    given."""

    path: str
    data: bytes | None = None
    tree: str | None = None
    blob: str | None = None


def _tree_entries(body: bytes, folder: str) -> list[TreeEntry]:
    """The entries of a raw tree object, as ``git cat-file --batch`` prints it: ``<octal mode> <name>\\0<20-byte
    id>`` each, trees with mode ``40000`` (what git's ``tree-walk.c`` ``decode_tree_entry`` reads); paths under
    ``folder``, modes as ``ls-tree`` shows them (six digits)."""
    entries = []
    pos = 0
    while pos < len(body):
        space = body.index(b" ", pos)
        nul = body.index(b"\0", space)
        mode = body[pos:space].decode()
        sha = body[nul + 1:nul + 21].hex()
        kind = "tree" if mode == "40000" else "commit" if mode == "160000" else "blob"
        name = _name(body[space + 1:nul])
        entries.append(TreeEntry(mode.rjust(6, "0"), kind, sha, f"{folder}/{name}" if folder else name))
        pos = nul + 21
    return entries


def _make_partial(folder: Path, clean_url: str) -> None:
    """Configure the new bare repository ``folder`` as a blobless partial clone of ``clean_url``: what
    ``git clone --filter=blob:none`` writes (git-config: ``extensions.partialClone``, ``remote.<name>.promisor``,
    ``remote.<name>.partialclonefilter``). No fetch refspec: fleetflow names its refspecs on every fetch."""
    for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", PROMISOR),
                       (f"remote.{PROMISOR}.url", clean_url), (f"remote.{PROMISOR}.promisor", "true"),
                       (f"remote.{PROMISOR}.partialclonefilter", BLOBLESS)):
        run_git(["config", key, value], git_dir=folder)


def serve_partial_clones(git_dir: Path) -> None:
    """Let clients fetch the repository at ``git_dir`` blobless and then fetch single blobs by id, as GitHub does:
    ``uploadpack.allowFilter`` (serve ``--filter``) and ``uploadpack.allowAnySHA1InWant`` (serve an object asked
    for by id; protocol v2 already does, v0 needs it). For the repositories the local forge and the tests serve
    from a folder: without it, ``git`` warns "filtering not recognized by server, ignoring" and sends every blob."""
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        run_git(["config", key, "true"], git_dir=git_dir)


def _who(role: bytes, name: str, email: str, when: int) -> bytes:
    return role + f" {name} <{email}> {when} +0000\n".encode()


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def _name(raw: bytes) -> str:
    """A path as git gives it (its bytes, any bytes: git keeps a name's bytes), as a ``str``: bytes that are not UTF-8
    become surrogates, as ``os.fsdecode`` makes them (PEP 383), so a name some person gave a file is listed, not a
    UnicodeDecodeError; :func:`_raw` gives git the same bytes back."""
    return raw.decode("utf-8", "surrogateescape")


def _dotted(path: str) -> bool:
    """``path`` has a ``.`` or ``..`` part: no tree holds such a name, and git reads ``<tree>:<path>`` whose path
    starts with ``./`` or ``../`` as relative to a working tree (gitrevisions(7), ``<rev>:<path>``), which a bare
    repository has not: the whole ``cat-file --batch`` fails ("relative path syntax can't be used outside working
    tree")."""
    return "." in path and any(part in (".", "..") for part in path.split("/"))


def _raw(name: str) -> bytes:
    """The bytes git knows a path (or a revision naming one) by: :func:`_name` undone."""
    return name.encode("utf-8", "surrogateescape")


def _quote(path: str) -> bytes:
    """A path as fast-import reads it: always C-quoted, so no name can be taken for a command or an option."""
    if path.isascii() and path.isprintable() and '"' not in path and "\\" not in path:
        return b'"' + path.encode() + b'"'  # nothing to escape (every name fleetflow renders)
    out = bytearray(b'"')
    for byte in _raw(path):
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    out += b'"'
    return bytes(out)


class MergeConflict(Exception):
    """A merge that git cannot do on its own; carries the conflicting paths."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        super().__init__(", ".join(self.paths) or "conflict")


def _tree_key(entry: tuple[str, str, str, str]) -> str:
    return entry[3]


def commit_env(identity: tuple[str, str], when: int) -> dict[str, str]:
    name, email = identity
    stamp = f"{when} +0000"
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": stamp}


def work_tree_head(directory: Path) -> str | None:
    """The commit checked out in ``directory`` when it is the top of a git work tree (or a bare repo), else None."""
    proc = run_git(["rev-parse", "--is-bare-repository", "--absolute-git-dir"], cwd=directory, check=False)
    if proc.returncode != 0:
        return None  # not a repo, or git missing: the commit is simply unknown
    bare, git_dir = proc.stdout.decode().split("\n")[:2]
    if bare != "true":
        top = run_git(["rev-parse", "--show-toplevel"], cwd=directory, check=False)
        git_dir = top.stdout.decode().strip() if top.returncode == 0 else ""
    if not git_dir or Path(git_dir).resolve() != directory.resolve():
        return None
    head = run_git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], cwd=directory, check=False)
    return head.stdout.decode().strip() or None if head.returncode == 0 else None


def work_tree_branch(directory: Path) -> str | None:
    """The branch checked out in ``directory`` when it is the top of a git work tree, else None (detached HEAD, no
    repo, git missing: the branch is simply unknown)."""
    if work_tree_head(directory) is None:
        return None
    proc = run_git(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=directory, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def run_in(cwd: Path, *args: str, config: Mapping[str, str] | None = None) -> str:
    """``git -c k=v ... args`` in a work tree (the demo builds its repos with it); output as text."""
    options = [part for key, value in (config or {}).items() for part in ("-c", f"{key}={value}")]
    return run_git([*options, *args], cwd=cwd).stdout.decode()


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    author: str
    committed: int  # committer time, seconds since the epoch
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


PULL_HEADS = "refs/pull/*/head"  # GitHub's read-only ref per pull request (ls-remote pattern)


def pull_refs(refs: Mapping[str, str]) -> dict[int, str]:
    """Pull request number -> head sha, from an ``ls-remote`` listing (:meth:`BareRepo.ls_remote`)."""
    pulls: dict[int, str] = {}
    for ref, sha in refs.items():
        number = ref.removeprefix("refs/pull/").removesuffix("/head")
        if ref.startswith("refs/pull/") and ref.endswith("/head") and number.isdigit():
            pulls[int(number)] = sha
    return pulls


def heads_of(pulls: Mapping[int, str], sha: str) -> list[int]:
    """The pull requests whose head is ``sha``, newest first."""
    return sorted((n for n, head in pulls.items() if head == sha), reverse=True)


# -- the promotion side's mirrors ---------------------------------------------------------------------------


@dataclass
class GitRepos:
    """Bare mirrors of the repos fleetflow works on, in ``cache_dir``: one per URL (without credentials)."""

    cache_dir: Path
    name: str = FLEETFLOW_NAME
    email: str = FLEETFLOW_EMAIL
    _repos: dict[str, BareRepo] = field(default_factory=dict)
    _blobless: set[str] = field(default_factory=set)

    def blobless(self, url: str) -> str:
        """Mark ``url`` (a GitOps repo) to be mirrored without blobs when its mirror is first made: a run reads
        a few of its files (the state, the old side of changed files), never the whole tree. Returns ``url``."""
        self._blobless.add(split_credentials(url)[0])
        return url

    @property
    def identity(self) -> tuple[str, str]:
        return (self.name, self.email)

    def mirror(self, url: str) -> BareRepo:
        clean = split_credentials(url)[0]
        if clean not in self._repos:
            self._repos[clean] = BareRepo(self.cache_dir / hashlib.sha256(clean.encode()).hexdigest()[:24],
                                          blobless_from=clean if clean in self._blobless else None)
        repo = self._repos[clean]
        repo.remote_url = url  # the newest credentials, for fetching blobs on demand (memory only)
        return repo

    def fetch(self, url: str, branches: Sequence[str]) -> dict[str, str | None]:
        """Fetch ``branches`` into ``refs/mirror/<branch>``; returns branch -> sha (None when it does not exist)."""
        for b in branches:
            check_ref(b)
        repo = self.mirror(url)
        remote = repo.ls_remote_heads(url)
        wanted = [b for b in branches if b in remote and repo.resolve(f"{MIRROR_PREFIX}{b}") != remote[b]]
        if wanted:
            repo.fetch(url, [f"+refs/heads/{b}:{MIRROR_PREFIX}{b}" for b in wanted])
        return {b: remote.get(b) for b in branches}

    def fetch_branch(self, url: str, branch: str) -> str | None:
        return self.fetch(url, [branch])[branch]

    def pull_heads(self, url: str, sha: str) -> list[int]:
        """The numbers of the pull requests whose ``refs/pull/<N>/head`` is ``sha`` (newest first): git's view of
        "a pull request was made for exactly this head". Reads refs only (no fetch, no API request)."""
        return heads_of(self.mirror(url).ls_remote_pulls(url), sha)

    def remote_refs(self, url: str, patterns: Sequence[str]) -> dict[str, str]:
        """Full ref name -> sha for the remote refs matching ``patterns`` (one ``ls-remote``; no fetch, no API
        request). :func:`pull_refs` and :func:`heads_of` read GitHub's pull refs out of it."""
        return self.mirror(url).ls_remote(url, patterns)

    def push_refs(self, url: str, updates: Mapping[str, tuple[str | None, str | None]]) -> None:
        """Compare-and-swap full refs (tags fleetflow owns, ...), all or nothing: set each ``ref`` to ``new`` (None:
        delete it) if it still points at ``expected`` (None: must not exist). A lost race raises
        :class:`PushRejected`. The commits must be in the mirror (fleetflow records commits it fetched or wrote)."""
        for ref in updates:
            if not ref.startswith("refs/"):
                raise ValueError(f"not a full ref name: {ref!r}")
            check_ref(ref.removeprefix("refs/"))
        self.mirror(url).push(url, {ref: (new or "", old or "") for ref, (new, old) in updates.items()})

    def resolve(self, url: str, rev: str) -> str | None:
        """Full sha of ``rev`` (a sha or an abbreviation) in the mirror, or None."""
        if not re.fullmatch(r"[0-9a-fA-F]{4,40}", rev):
            return None
        return self.mirror(url).resolve(f"{rev}^{{commit}}")

    def is_ancestor(self, url: str, older: str, newer: str) -> bool:
        return self.mirror(url).is_ancestor(older, newer)

    def ambiguous(self, url: str, prefix: str) -> bool:
        """Whether the abbreviated sha ``prefix`` names more than one object of the mirror (``git rev-parse
        --disambiguate``, gitrevisions)."""
        found = self.mirror(url).git("rev-parse", f"--disambiguate={prefix}", check=False)
        return found.returncode == 0 and len(found.stdout.split()) > 1

    def read_file(self, url: str, sha: str, path: str) -> str | None:
        """A file's text, to look at (a workflow's jobs, whether a file is the one init writes): bytes that are not
        UTF-8 are shown as U+FFFD. A file read as input (the pin) is read with :meth:`read_bytes` and refused as
        such."""
        data = self.mirror(url).read_file(sha, path)
        return None if data is None else data.decode(errors="replace")

    def read_bytes(self, url: str, sha: str, path: str) -> bytes | None:
        return self.mirror(url).read_file(sha, path)

    def commit_time(self, url: str, sha: str) -> int:
        return self.mirror(url).commit_time(sha)

    def log(self, url: str, sha: str, path: str | None = None, limit: int = 200,
            first_parent: bool = False) -> list[str]:
        return self.mirror(url).log(sha, path, limit, first_parent=first_parent)

    def commits(self, url: str, revs: Sequence[str], *, limit: int | None = None, first_parent: bool = False,
                no_walk: bool = False, no_merges: bool = False) -> list[CommitInfo]:
        """One ``git log`` over ``revs`` (newest first): sha, author, committer time and message of each commit.
        ``no_walk``: exactly ``revs``, not their history; ``no_merges``: commits with one parent (or none) only."""
        if not revs:
            return []
        args = ["log", "--format=%H%x00%an%x00%ct%x00%B%x1e"]
        if limit is not None:
            args.append(f"--max-count={limit}")
        if first_parent:
            args.append("--first-parent")
        if no_merges:
            args.append("--no-merges")
        if no_walk:
            args += ["--no-walk=unsorted", "--ignore-missing"]
        out = self.mirror(url).git(*args, "--end-of-options", *revs, "--").stdout.decode(errors="replace")
        found: list[CommitInfo] = []
        for record in out.split("\x1e"):
            fields = record.strip("\n").split("\x00")
            if len(fields) == 4:
                found.append(CommitInfo(fields[0], fields[1], int(fields[2]), fields[3].strip()))
        return found

    def export(self, url: str, sha: str, dest: Path) -> Path:
        """Write the files of ``sha`` into ``dest`` (created): for reading a control-plane tree with the parser."""
        return self.mirror(url).export(sha, dest)

    def commit_files(self, url: str, parent: str | None, files: Mapping[str, bytes], message: str,
                     when: int) -> str | None:
        """A commit on top of ``parent`` (None: a first commit) whose tree is the parent's with ``files``
        (path -> bytes) written. None when nothing changes."""
        repo = self.mirror(url)
        base = repo.tree_of(parent) if parent is not None else None
        tree = self._replace(repo, base, {tuple(p.split("/")): d for p, d in files.items()})
        if tree == base:
            return None
        return repo.commit_tree(tree, [parent] if parent is not None else [], message, (self.name, self.email), when)

    def _replace(self, repo: BareRepo, tree: str | None, files: Mapping[tuple[str, ...], bytes]) -> str:
        entries = {e.path: e for e in repo.ls_tree(tree)} if tree else {}
        rows = {name: (e.mode, e.kind, e.sha, name) for name, e in entries.items()}
        here = {parts[0]: data for parts, data in files.items() if len(parts) == 1}
        below: dict[str, dict[tuple[str, ...], bytes]] = {}
        for parts, data in files.items():
            if len(parts) > 1:
                below.setdefault(parts[0], {})[parts[1:]] = data
        for name, data in here.items():
            rows[name] = ("100644", "blob", repo.hash_blob(data), name)
        for name, sub in below.items():
            old = entries.get(name)
            rows[name] = ("040000", "tree", self._replace(repo, old.sha if old and old.kind == "tree" else None, sub),
                          name)
        return repo.mktree(rows.values())

    def push(self, url: str, sha: str, branch: str, expected: str | None) -> None:
        """Set ``branch`` to ``sha`` if it still points at ``expected`` (None: must not exist); the mirror's ref
        follows, so the next read needs no fetch."""
        check_ref(branch)
        repo = self.mirror(url)
        try:
            repo.push(url, {f"refs/heads/{branch}": (sha, expected or "")})
        except PushRejected:
            raise PushRejected(f"{branch} moved on {scrub(split_credentials(url)[0])} while fleetflow worked; "
                               "re-read and retry", command="push") from None
        repo.git("update-ref", f"{MIRROR_PREFIX}{branch}", sha)


__all__ = [
    "FAST_IMPORT_TRIM_THRESHOLD", "PULL_HEADS", "BareRepo", "GitError", "GitRepos", "MergeConflict", "PushRejected",
    "TreeEdit", "TreeEntry", "check_ref", "fast_import_env", "git_reason", "heads_of", "pull_refs",
    "retry_races", "run_git", "scrub", "serve_partial_clones", "split_credentials",
]

