"""A runner with no cache fetches a GitOps repo without blobs (a blobless partial clone), then exactly the blobs a
run reads, in one request per batch, with the credentials in the environment.

Built against git's own documentation (github:git/git):
- ``Documentation/technical/partial-clone.adoc``: a partial clone fetches with ``--filter=blob:none``, marks the
  pack as a promisor pack, records ``extensions.partialClone = <remote>`` and ``remote.<name>.promisor = true``;
  missing objects are "faulted in" on demand, but "Dynamic object fetching tends to be slow as objects are fetched
  one at a time" and "invokes fetch-pack once *for each item* ... multiple authentication requests", so commands
  that know what they need "bulk pre-fetch all required missing blobs in a single batch".
- ``Documentation/config/remote.adoc`` (``remote.<name>.promisor``, ``remote.<name>.partialclonefilter``),
  ``Documentation/config/extensions.adoc`` (``extensions.partialClone``), ``Documentation/fetch-options.adoc``
  (``--filter=<filter-spec>``), ``Documentation/rev-list-options.adoc`` (``--missing=allow-any`` never fetches).
- ``Documentation/config/uploadpack.adoc``: a server sends filtered packs only with ``uploadpack.allowFilter`` and
  objects asked for by id with ``uploadpack.allowAnySHA1InWant`` (protocol v0; v2 serves them anyway).
GitHub serves partial clones ("Get up to speed with partial clone and shallow clone", github.blog, 2020-12-21:
"GitHub.com and GitHub Enterprise Server 2.22+ support partial clone"), which is why the stand-ins here allow it.
"""

from __future__ import annotations

from pathlib import Path

from fleetflow.forge.git import BareRepo, GitRepos, run_git, serve_partial_clones, split_credentials
from fleetflow.promotion.promote import promote_many
from fleetflow.promotion.schedule import schedule_environment
from tests.fleet import git
from tests.githttp import GitHttp
from tests.test_promotion import first_commit, fleet_config, make_local_fleet, roll_out

FILES = {f"ct{i}/app{j}/manifest.yaml": f"kind: ConfigMap # {i}/{j}\n".encode() for i in range(5) for j in range(8)}


def make_origin(root: Path) -> Path:
    """A bare repo ``gitops.git`` under ``root`` with FILES on ``main``, served like GitHub serves repos."""
    origin = root / "gitops.git"
    run_git(["init", "--quiet", "--bare", "--initial-branch=main", str(origin)])
    serve_partial_clones(origin)
    seed = root / "seed"
    seed.mkdir()
    git(seed, "init", "-q")
    for path, data in FILES.items():
        (seed / path).parent.mkdir(parents=True, exist_ok=True)
        (seed / path).write_bytes(data)
    git(seed, "add", "-A")
    git(seed, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "seed")
    git(seed, "push", "-q", str(origin), "HEAD:refs/heads/main")
    return origin


def blob_ids(repo: BareRepo, rev: str) -> dict[str, str]:
    return {e.path: e.sha for e in repo.ls_tree(rev, recursive=True, trees=False) if e.kind == "blob"}


def promised(repo: BareRepo) -> set[str]:
    """Every object id in the repository's promisor packs: what came from the remote (written objects are not)."""
    ids: set[str] = set()
    for marker in (repo.folder / "objects" / "pack").glob("*.promisor"):
        index = marker.with_suffix(".idx").read_bytes()
        out = run_git(["show-index"], stdin=index).stdout.decode()
        ids.update(line.split()[1] for line in out.splitlines())
    return ids


def test_a_new_gitops_mirror_fetches_no_blobs_then_one_batch_with_credentials(tmp_path: Path) -> None:
    make_origin(tmp_path)
    with GitHttp(tmp_path) as server:
        url = server.url("gitops.git")
        repos = GitRepos(tmp_path / "cache")
        repos.blobless(url)
        tip = repos.fetch_branch(url, "main")
        assert tip is not None
        repo = repos.mirror(url)
        assert repo.partial and len(server.fetches) == 1
        assert b"filter blob:none" in server.fetches[0]
        ids = blob_ids(repo, tip)  # trees came: listing needs no request
        assert len(ids) == len(FILES) and len(server.fetches) == 1
        assert repo.absent(ids.values()) == sorted(ids.values())  # no blob came with the fetch
        wanted = sorted(ids)[:10]
        got = repo.blobs(ids[p] for p in wanted)
        assert {p: got[ids[p]] for p in wanted} == {p: FILES[p] for p in wanted}
        assert len(server.fetches) == 2  # ten blobs, one request
        assert repo.absent(ids.values()) == sorted(ids[p] for p in sorted(ids)[10:])
        assert repos.read_file(url, tip, "ct4/app7/manifest.yaml") == FILES["ct4/app7/manifest.yaml"].decode()
        assert repos.read_file(url, tip, "ct4/app7/none.yaml") is None
        assert repos.read_file(url, tip, "ct4") is None  # a folder is no file
        assert repo.read_file("0" * 40, "ct4/app7/manifest.yaml") is None  # an unknown commit has no files
        assert len(server.fetches) == 3
        many = repo.read_files(tip, ["ct3/app1/manifest.yaml", "ct3/app2/manifest.yaml", "./ct2/app5/manifest.yaml",
                                     "ct2/none.yaml", "ct2"])
        assert many == {"ct3/app1/manifest.yaml": FILES["ct3/app1/manifest.yaml"],
                        "ct3/app2/manifest.yaml": FILES["ct3/app2/manifest.yaml"],
                        "./ct2/app5/manifest.yaml": FILES["ct2/app5/manifest.yaml"],
                        "ct2/none.yaml": None, "ct2": None}
        assert len(server.fetches) == 4  # three files, one request
        assert server.refused == 0  # the credentials went with every request (as a header, from the environment)
    config = (repo.folder / "config").read_text()
    assert "partialClone = origin" in config and "promisor = true" in config
    assert server.token not in config and "x-access-token" not in config  # the URL is kept without credentials
    assert split_credentials(url)[0] in config


def test_git_on_demand_would_cost_one_request_per_blob(tmp_path: Path) -> None:
    """Why the batch: the same five blobs read by ``git cat-file --batch`` (git's dynamic fetch) cost five
    fetches; :meth:`BareRepo.blobs` costs one."""
    make_origin(tmp_path)
    with GitHttp(tmp_path) as server:
        url = server.url("gitops.git")
        repos = GitRepos(tmp_path / "cache")
        tip = repos.fetch_branch(repos.blobless(url), "main")
        assert tip is not None
        repo = repos.mirror(url)
        ids = sorted(blob_ids(repo, tip).values())
        before = len(server.fetches)
        proc = repo.git("cat-file", "--batch", stdin="".join(f"{s}\n" for s in ids[:5]).encode())
        assert proc.stdout.count(b" blob ") == 5
        assert len(server.fetches) - before == 5
        before = len(server.fetches)
        assert len(repo.blobs(ids[5:10])) == 5
        assert len(server.fetches) - before == 1


def test_a_mirror_that_exists_stays_as_it_is(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    url = str(origin)
    full = GitRepos(tmp_path / "cache")
    tip = full.fetch_branch(url, "main")
    assert tip is not None and not full.mirror(url).partial
    later = GitRepos(tmp_path / "cache")  # a later run that knows it is a GitOps repo: the cache stays full
    assert later.fetch_branch(later.blobless(url), "main") == tip
    repo = later.mirror(url)
    assert not repo.partial and repo.absent(blob_ids(repo, tip).values()) == []


def test_without_server_support_the_fetch_is_whole_and_still_works(tmp_path: Path) -> None:
    """A server that does not allow filters sends every blob (git: "filtering not recognized by server,
    ignoring"); nothing is fetched later."""
    origin = make_origin(tmp_path)
    run_git(["config", "uploadpack.allowFilter", "false"], git_dir=origin)
    repos = GitRepos(tmp_path / "cache")
    tip = repos.fetch_branch(repos.blobless(str(origin)), "main")
    assert tip is not None
    repo = repos.mirror(str(origin))
    assert repo.absent(blob_ids(repo, tip).values()) == []
    assert repos.read_file(str(origin), tip, "ct0/app0/manifest.yaml") == FILES["ct0/app0/manifest.yaml"].decode()


def test_schedule_on_a_cold_runner_reads_only_the_state_and_the_changed_files(tmp_path: Path) -> None:
    """promote + schedule into an empty cache: the GitOps mirror is blobless, the commit is built on trees only,
    the push goes through, and the PR diff shows the old side of a changed file (fetched in a batch)."""
    fleet = make_local_fleet(tmp_path)
    sha = first_commit(fleet)
    with fleet.context() as ctx:
        [outcome] = promote_many(ctx, None, sha)
        repo = ctx.git.mirror(fleet.gitops_url)
    assert outcome.schedule is not None and outcome.schedule.operation == "created"
    assert repo.partial
    assert roll_out(fleet, "dev") == "success"
    fleet.push_env("dev", {"configs.yaml": fleet_config("debug")}, "dev: debug logging")
    cold = GitRepos(tmp_path / "cold-cache")  # a new runner: nothing cached
    with fleet.context() as ctx:
        ctx.git = cold
        outcome2 = schedule_environment(ctx, "dev")
    assert outcome2.operation == "created"
    mirror = cold.mirror(fleet.gitops_url)
    assert mirror.partial
    base = fleet.gitops_tip("dev")
    blobs = blob_ids(mirror, base)
    fetched = {p for p, sha in blobs.items() if sha in promised(mirror)}  # came from the remote
    assert "README.md" in blobs and "README.md" not in fetched  # a file no run reads never came
    assert ".fleetflow/state.json" in fetched
    changed = set(mirror.changed_paths(base, outcome2.gitops_commit or ""))
    assert fetched <= changed | {".fleetflow/state.json"}  # nothing was fetched that the PR diff does not show
    pr = fleet.open_pr("dev")
    assert "LOG_LEVEL: info" in pr.body and "LOG_LEVEL: debug" in pr.body  # the old side was fetched and shown
    # the commit pushed from the blobless mirror holds the same tree the full mirror would build
    full = GitRepos(tmp_path / "full-cache")
    full_tip = full.fetch_branch(fleet.gitops_url, "fleetflow/dev")
    assert full_tip == outcome2.gitops_commit
