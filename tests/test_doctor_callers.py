"""``fleetflow doctor`` reads the caller workflows by what they call, whatever their names: the inputs they pass
(``approval-environment``, ``status-page``), the secrets they pass, and the branches their triggers run for.

GitHub runs every file in ``.github/workflows/`` whatever its name ("You must store workflow files in the
.github/workflows directory of your repository", https://docs.github.com/en/actions/reference/workflows-and-actions/
workflow-syntax), so a caller copied from examples/workflows/ and named as its owner likes is the caller.
"""

from __future__ import annotations

from fleetflow.promotion.bootstrap import MARKER, WORKFLOW_FILE
from fleetflow.promotion.caller_workflows import filter_matches
from fleetflow.promotion.doctor import diagnose
from tests.fleet import ENVIRONMENTS, Fleet, environments_file, git
from tests.ghstub.server import GitHubStub
from tests.test_setup import commit_file, init_fleet


def rename_caller(fleet: Fleet, url: str, branch: str, name: str, edit: tuple[str, str] = ("", "")) -> str:
    """Move init's caller on ``branch`` to ``.github/workflows/<name>`` (without init's marker line), with the one
    replacement ``edit``; push. The new path."""
    work = fleet.root / f"rename-{branch}-{len(list(fleet.root.iterdir()))}"
    git(fleet.root, "clone", "-q", "-b", branch, url, str(work))
    own = f".github/workflows/{name}"
    text = (work / WORKFLOW_FILE).read_text().replace(MARKER + "\n", "")
    if edit[0]:
        assert text.count(edit[0]) == 1
        text = text.replace(*edit)
    git(work, "mv", WORKFLOW_FILE, own)
    (work / own).write_text(text)
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", f"the caller as {name}")
    git(work, "push", "-q", "origin", branch)
    return own


def test_the_inputs_of_a_caller_under_a_name_of_its_own_are_read(fleet: Fleet) -> None:
    """``approval-environment`` (control plane's main) and ``status-page`` (GitOps default branch) in a caller not
    named fleetflow.yml: until 2026-11-29 doctor read only fleetflow.yml for them, so with the caller renamed it
    said "no approval-environment in the caller" and never checked the GitHub Environments the jobs run in ("When a
    workflow job references an environment, the job won't start until all of the environment's protection rules
    pass", https://docs.github.com/en/actions/reference/environments): a manual promotion ran unapproved in an
    environment GitHub created without rules, and doctor said healthy."""
    init_fleet(fleet)
    rename_caller(fleet, fleet.cp_url, "main", "control-plane.yml",
                  ("    secrets:\n", "    with:\n      approval-environment: fleetflow-{0}\n    secrets:\n"))
    default = fleet.forge.default_branch(fleet.gitops_id)
    rename_caller(fleet, fleet.gitops_url, default, "gitops.yaml",
                  ("      control-plane:", "      status-page: true\n      control-plane:"))
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert f"{fleet.cp_id}: no approval-environment in the caller" not in " ".join(diagnosis.checked)
    stub: GitHubStub | None = getattr(fleet, "stub", None)
    if stub is None:  # the local forge has no GitHub Environments: both are looked for, and skipped
        assert diagnosis.findings == []
        assert f"{fleet.cp_id}: GitHub Environments (the local forge has none)" in diagnosis.skipped
        assert f"{fleet.gitops_id}: GitHub Environments (the local forge has none)" in diagnosis.skipped
        return
    found = {(f.check, f.where) for f in diagnosis.findings}
    assert found == {("environments", fleet.cp_id), ("environments", f"{fleet.gitops_id}@{default}")}
    approvals = [f for f in diagnosis.findings if f.where == fleet.cp_id]
    assert len(approvals) == len(ENVIRONMENTS)
    assert all("does not exist" in f.problem for f in approvals)


def test_github_branch_filter_patterns() -> None:
    """GitHub's "Filter pattern cheat sheet" (https://docs.github.com/en/actions/reference/workflows-and-actions/
    workflow-syntax#filter-pattern-cheat-sheet): ``*`` "Matches zero or more characters, but does not match the /
    character", ``**`` "Matches zero or more of any character", ``?`` "Matches zero or one of the preceding
    character", ``+`` "Matches one or more of the preceding character", ``[]`` one character of a set or range,
    ``!`` at the start negates the patterns before it; order matters ("A matching positive pattern after a negative
    match will include the Git ref again"); ``\\`` escapes a special character (github/docs, data/reusables/actions/
    workflows/run-on-specific-branches-or-tags1.md: "you need to escape each of these special characters with
    \\")."""
    cases = [
        (["main", "dev"], "dev", True), (["main", "dev"], "qa", False), ([], "dev", False),
        (["release/*"], "release/a", True), (["release/*"], "release/a/b", False), (["*"], "feature/x", False),
        (["release/**"], "release/a/b", True), (["**"], "feature/x", True),
        (["prod-*", "!prod-us"], "prod-us", False), (["prod-*", "!prod-us"], "prod-eu", True),
        (["!prod-us", "prod-*"], "prod-us", True),
        (["Octoc?t"], "Octoct", True), (["Octoc?t"], "Octocat", False), (["qa?"], "q", True),
        (["q+a"], "qqqa", True), (["q+a"], "a", False),
        (["[dq]*"], "qa", True), (["[dq]*"], "prod-eu", False), (["v[0-9]"], "v7", True),
        (["a\\*"], "a*", True), (["a\\*"], "ab", False), (["prod.eu"], "prod-eu", False),
    ]
    assert [(p, n) for p, n, want in cases if filter_matches(p, n) != want] == []


def set_branches(text: str, event: str, value: str) -> str:
    """``text`` with the ``branches:`` line of ``on.<event>`` (init's callers list it right below) replaced."""
    lines = text.splitlines(keepends=True)
    start = lines.index(f"  {event}:\n")
    at = next(i for i in range(start, len(lines)) if lines[i].startswith("    branches:"))
    lines[at] = f"    branches: {value}\n"
    return "".join(lines)


def test_doctor_reports_a_branch_the_caller_does_not_run_for(fleet: Fleet) -> None:
    """A push runs the workflow file of the pushed commit, a pull_request the one of the PR's merge ref (base:
    the GitOps environment branch) ("Events that trigger workflows", https://docs.github.com/en/actions/
    writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows), filtered by its
    ``branches`` (workflow syntax, ``on.<push|pull_request>.<branches|branches-ignore>``), and a pull_request
    workflow runs on ``closed`` only when ``types`` lists it ("By default, a workflow only runs when a pull_request
    event's activity type is opened, synchronize, or reopened"). An environment branch its own caller does not run
    for was only picked up by the cron tick, and doctor said healthy; now a ``triggers`` problem names the file, the
    line and the filter to write, glob patterns read as GitHub does."""
    init_fleet(fleet)
    cp, go = fleet.cp_id, fleet.gitops_id
    with fleet.context() as ctx:
        text = ctx.git.read_file(ctx.cp_url, ctx.git.fetch_branch(ctx.cp_url, "prod-eu") or "", WORKFLOW_FILE)
        go_text = ctx.git.read_file(fleet.gitops_url, ctx.git.fetch_branch(fleet.gitops_url, "qa") or "",
                                    WORKFLOW_FILE)
    assert text is not None and go_text is not None
    # a new environment added to the chain, its branch's copy of the caller not updated
    fleet.push_env("prod-eu", {WORKFLOW_FILE: set_branches(text, "push", "[main, dev, qa]")}, "old caller")
    # globs: prod-* but not prod-us (an exclusion after it), and dr through d?r
    fleet.push_env("prod-us", {WORKFLOW_FILE: set_branches(text, "push", "[main, dev, qa, 'prod-*', '!prod-us', "
                                                                          "'d?r']")}, "globs")
    fleet.push_env("dr", {WORKFLOW_FILE: set_branches(text, "push", "[main, dev, qa, 'prod-*', 'd?r']")}, "globs")
    commit_file(fleet, fleet.gitops_url, "qa",
                WORKFLOW_FILE, go_text.replace("    types: [closed]\n", "").replace("branches: [", "branches: [main, "))
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    found = {(f.check, f.where): f for f in diagnosis.findings}
    assert set(found) == {("triggers", f"{cp}@prod-eu"), ("triggers", f"{cp}@prod-us"), ("triggers", f"{go}@qa")}
    eu = found[("triggers", f"{cp}@prod-eu")]
    assert eu.problem == (f"{WORKFLOW_FILE}:9: on.push.branches (main, dev, qa) does not match prod-eu: a push to "
                          "prod-eu (a promotion's pin, a change to prod-eu's files) starts no fleetflow run: it waits "
                          "for the cron tick")
    assert eu.fix.startswith(f"in {WORKFLOW_FILE}, on.push: branches: [main, dev, qa, dr, prod-eu, prod-us] "
                             "(patterns: https://docs.github.com/")
    us = found[("triggers", f"{cp}@prod-us")]
    assert "on.push.branches (main, dev, qa, prod-*, !prod-us, d?r) does not match prod-us" in us.problem
    assert "branches: [main, dev, qa, 'prod-*', '!prod-us', 'd?r', prod-us]" in us.fix
    qa = found[("triggers", f"{go}@qa")]
    assert qa.problem.startswith(f"{WORKFLOW_FILE}:9: on.pull_request.types (none: GitHub's default, opened, "
                                 "synchronize and reopened) lacks closed: qa's merged PR into qa starts no")
    assert "types: [closed]" in qa.fix
    assert f"{cp}@dr: {WORKFLOW_FILE} runs on push for dr" in diagnosis.checked


def test_doctor_reports_a_caller_that_inherits_the_secrets(fleet: Fleet) -> None:
    """``secrets: inherit`` passes the caller's secrets under their own names ("jobs.<job_id>.secrets.inherit",
    https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax), and a secret's name holds
    only alphanumerics and underscores ("Naming your secrets", https://docs.github.com/en/actions/reference/security/
    secrets): the reusable workflows' app-id and app-private-key stay empty, every run stops with "no credentials"
    and doctor said healthy. One problem per file, naming the branches it is on."""
    init_fleet(fleet)
    mapping = ("    secrets:\n      app-id: ${{ secrets.FLEETFLOW_APP_ID }}\n"
               "      app-private-key: ${{ secrets.FLEETFLOW_APP_PRIVATE_KEY }}\n")
    rename_caller(fleet, fleet.cp_url, "main", "platform.yml", (mapping, "    secrets: inherit\n"))
    rename_caller(fleet, fleet.cp_url, "dev", "platform.yml", (mapping, "    secrets: inherit\n"))
    with fleet.context() as ctx:
        [problem] = diagnose(ctx).findings
    assert (problem.check, problem.where) == ("secrets", f"{fleet.cp_id}@main, dev")
    assert problem.problem.startswith(
        ".github/workflows/platform.yml:41: job fleetflow passes secrets: inherit to fleetflow-control-plane.yml, "
        "that is the repository's secrets under their own names, but it reads app-id and app-private-key: ")
    assert problem.fix.startswith("in job fleetflow, pass them by name instead of inherit: secrets: app-id: "
                                  "${{ secrets.FLEETFLOW_APP_ID }} and app-private-key: ")


def test_a_filter_pattern_that_backtracks_is_decided_in_linear_time() -> None:
    """A branch filter is the workflow author's text, matched against every branch doctor checks. Translated for
    Python's ``re``, ``a++++`` was ``(?:(?:(?:(?:a)+)+)+)+``: against ``aaaaaaaaaaaaaa!`` (14 ``a``) it took 8 s and
    16 ``a`` took 135 s (measured 2026-11-29), so this name would not be decided in a lifetime. A run of ``?`` and
    ``+`` now widens one quantifier ("Matches one or more of the preceding character", cheat sheet: ``(x+)+`` is
    ``x+``, ``(x+)?`` is ``x*``), and RE2 (fleetflow/linear_regex.py) matches it: "One of its primary guarantees is
    that the match time is linear in the length of the input string" (RE2's README, https://github.com/google/re2).
    Repetitions stacked on ``*`` and ``**`` too."""
    name = "a" * 40 + "!"
    assert filter_matches(["a++++"], name) is False
    assert filter_matches(["a++++!"], name) is True
    assert filter_matches(["a+?+?" * 30 + "b"], name) is False
    assert filter_matches(["*+*+*+*+*+*+b", "!**+**+**+c"], name) is False
    assert filter_matches(["a+?"], "") is True and filter_matches(["a?+b"], "aab") is True
    assert filter_matches(["a?+b"], "a") is False


def test_doctor_reports_a_filter_pattern_with_a_range_backwards(fleet: Fleet) -> None:
    """``[z-a]``: a character range must run from low to high ("[] Matches one alphanumeric character listed in the
    brackets or included in ranges. Ranges can only include a-z, A-Z, and 0-9", the cheat sheet,
    https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax#filter-pattern-cheat-sheet).
    Python's ``re`` raised "bad character range" out of doctor (a traceback); now it is the file's problem."""
    init_fleet(fleet)
    with fleet.context() as ctx:
        text = ctx.git.read_file(ctx.cp_url, ctx.git.fetch_branch(ctx.cp_url, "qa") or "", WORKFLOW_FILE)
    assert text is not None
    fleet.push_env("qa", {WORKFLOW_FILE: set_branches(text, "push", "[main, '[z-a]*']")}, "a range backwards")
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    [problem] = diagnosis.findings
    assert (problem.check, problem.where) == ("triggers", f"{fleet.cp_id}@qa")
    assert problem.problem.startswith(f"{WORKFLOW_FILE}:9: on.push.branches holds '[z-a]*', no filter pattern (")
    assert problem.fix.startswith(f"in {WORKFLOW_FILE}, on.push: correct [z-a]* (a range runs from low to high")


SHARDS_CALLER = """\
name: fleetflow shards
on:
  push:
    branches: [BRANCHES]
  workflow_dispatch:
  schedule:
    - cron: "41 * * * *"
permissions: {}
jobs:
  shards:
    permissions: {}
    uses: fleetflow/fleetflow/.github/workflows/fleetflow-schedule-shards.yml@v0
    with:
      environment: dev
      shards: 3
    secrets:
      app-id: ${{ secrets.FLEETFLOW_APP_ID }}
      app-private-key: ${{ secrets.FLEETFLOW_APP_PRIVATE_KEY }}
"""


def test_doctor_reads_the_triggers_and_secrets_of_the_shards_caller(fleet: Fleet) -> None:
    """The shards caller (examples/workflows/schedule-shards.yml, docs/setup.md section 10) is a workflow of its
    own, started by events, not called by the control-plane caller: a push to the environment's branch (a
    promotion's pin) runs the pushed commit's copy ("Events that trigger workflows", https://docs.github.com/en/
    actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows), so that copy's
    ``on.push.branches`` must match the branch, or the sharded schedule waits for the cron tick. A copy of the
    example that kept ``branches: [prod]`` for the environment dev did so and doctor said healthy. Its
    ``secrets: inherit`` fills no ``app-id`` (``on.workflow_call.secrets`` of
    .github/workflows/fleetflow-schedule-shards.yml) as for the other callers."""
    init_fleet(fleet)
    fleet.push_main(environments_file(sharded=("dev",)), "dev: sharded schedule")
    caller = ".github/workflows/fleetflow-shards.yml"
    mapping = ("    secrets:\n      app-id: ${{ secrets.FLEETFLOW_APP_ID }}\n"
               "      app-private-key: ${{ secrets.FLEETFLOW_APP_PRIVATE_KEY }}\n")
    inherit = SHARDS_CALLER.replace(mapping, "    secrets: inherit\n")
    fleet.push_main({caller: inherit.replace("BRANCHES", "prod")}, "the shards caller, copied")
    fleet.push_env("dev", {caller: inherit.replace("BRANCHES", "prod")}, "the shards caller, copied")
    cp = fleet.cp_id
    with fleet.context() as ctx:
        found = {(f.check, f.where): f for f in diagnose(ctx).findings}
    assert set(found) == {("triggers", f"{cp}@dev"), ("secrets", f"{cp}@main, dev")}
    assert found[("triggers", f"{cp}@dev")].problem == (
        f"{caller}:4: on.push.branches (prod) does not match dev: a push to dev (a promotion's pin, a change to "
        "dev's files) starts no sharded schedule of dev: it waits for the cron tick")
    assert found[("triggers", f"{cp}@dev")].fix.startswith(f"in {caller}, on.push: branches: [prod, dev] ")
    assert found[("secrets", f"{cp}@main, dev")].problem.startswith(
        f"{caller}:16: job shards passes secrets: inherit to fleetflow-schedule-shards.yml")

    fleet.push_main({caller: SHARDS_CALLER.replace("BRANCHES", "prod")}, "secrets by name")
    fleet.push_env("dev", {caller: SHARDS_CALLER.replace("BRANCHES", "dev")}, "runs for dev")
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    assert diagnosis.findings == []
    assert f"{cp}@dev: {caller} runs on push for dev" in diagnosis.checked


def set_paths(text: str, event: str, line: str) -> str:
    """``text`` with ``line`` (a ``paths:`` or ``paths-ignore:`` filter) added under ``on.<event>``."""
    assert text.count(f"  {event}:\n") == 1
    return text.replace(f"  {event}:\n", f"  {event}:\n    {line}\n")


def test_doctor_reports_files_a_paths_filter_leaves_without_a_run(fleet: Fleet) -> None:
    """A caller's ``paths``/``paths-ignore`` filter: "If at least one path matches a pattern in the paths filter,
    the workflow runs"; "When all the path names match patterns in paths-ignore, the workflow will not run" (GitHub
    docs, github/docs data/reusables/actions/workflows/section-triggering-a-workflow-paths.md; workflow syntax,
    ``on.<push|pull_request|pull_request_target>.<paths|paths-ignore>``). A ``paths`` filter copied from a
    monorepo's CI that leaves out templates/ (main) or the pin file (an environment branch: promote's pin commit
    changes that file alone) started no run for such a push, silently: the change waited for the cron tick, and
    doctor said healthy. Now a ``triggers`` problem names the files, the line and what to add; a filter that lets
    every file fleetflow reads through (``paths-ignore`` of docs) is fine."""
    init_fleet(fleet)
    cp = fleet.cp_id
    with fleet.context() as ctx:
        main_text = ctx.git.read_file(ctx.cp_url, ctx.main_tip(), WORKFLOW_FILE)
        dev_text = ctx.git.read_file(ctx.cp_url, ctx.git.fetch_branch(ctx.cp_url, "dev") or "", WORKFLOW_FILE)
        qa_text = ctx.git.read_file(ctx.cp_url, ctx.git.fetch_branch(ctx.cp_url, "qa") or "", WORKFLOW_FILE)
    assert main_text is not None and dev_text is not None and qa_text is not None
    commit_file(fleet, fleet.cp_url, "main", WORKFLOW_FILE,
                set_paths(main_text, "push", "paths: ['environments/**', 'workloads/**']"))
    fleet.push_env("dev", {WORKFLOW_FILE: set_paths(dev_text, "push", "paths: ['cluster-types/**', 'configs/**']")},
                   "only the cluster-type folders")
    fleet.push_env("qa", {WORKFLOW_FILE: set_paths(qa_text, "push", "paths-ignore: ['docs/**', '**.md']")}, "docs")
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    found = {(f.check, f.where): f for f in diagnosis.findings}
    assert set(found) == {("triggers", f"{cp}@main"), ("triggers", f"{cp}@dev")}, diagnosis.findings
    main = found[("triggers", f"{cp}@main")]
    assert main.problem == (
        f"{WORKFLOW_FILE}:9: on.push.paths (environments/**, workloads/**) leaves out 4 of the files fleetflow reads "
        "on main: .environments/envs.yaml, templates/config.yaml, templates/flux.yaml and 1 more: a push to main (a "
        "new commit to promote) that changes only them starts no fleetflow run: it waits for the cron tick")
    assert main.fix.startswith(f"in {WORKFLOW_FILE}, remove on.push.paths (fleetflow renders the whole commit: every "
                               "push counts), or add ['.environments/**', 'templates/**'] to it (https://docs.github")
    dev = found[("triggers", f"{cp}@dev")]
    assert dev.problem.startswith(f"{WORKFLOW_FILE}:9: on.push.paths (cluster-types/**, configs/**) leaves out 6 of "
                                  "the files fleetflow reads on dev: base-repo.yaml, ")
    assert "a push to dev (a promotion's pin, a change to dev's files) that changes only them starts no" in dev.problem
    assert "add [base-repo.yaml, cluster-types.yaml, " in dev.fix
    assert f"{cp}@qa: {WORKFLOW_FILE} runs on push for qa and each file fleetflow reads" in diagnosis.checked
    # paths-ignore of a file fleetflow reads, and a pattern that is none (a range backwards)
    fleet.push_env("qa", {WORKFLOW_FILE: set_paths(qa_text, "push", "paths-ignore: ['docs/**', '*.yaml']")}, "yaml")
    fleet.push_env("dev", {WORKFLOW_FILE: set_paths(dev_text, "push", "paths: ['[z-a]*']")}, "backwards")
    with fleet.context() as ctx:
        diagnosis = diagnose(ctx)
    found = {(f.check, f.where): f for f in diagnosis.findings}
    qa = found[("triggers", f"{cp}@qa")]
    assert qa.problem.startswith(f"{WORKFLOW_FILE}:9: on.push.paths-ignore (docs/**, *.yaml) ignores 6 of the files "
                                 "fleetflow reads on qa: base-repo.yaml, ")
    assert qa.fix.startswith(f"in {WORKFLOW_FILE}, remove *.yaml from on.push.paths-ignore (https://docs.github")
    dev = found[("triggers", f"{cp}@dev")]
    assert dev.problem.startswith(f"{WORKFLOW_FILE}:9: on.push.paths holds '[z-a]*', no filter pattern")


def test_github_paths_filters() -> None:
    """The paths filters read as the branch filters (the same "Filter pattern cheat sheet"): ``*`` stops at ``/``,
    ``**`` does not, ``!`` after a match excludes again; a workflow with neither filter has no gap."""
    from fleetflow.promotion.caller_workflows import paths_gap

    files = ["base-repo.yaml", "configs/a.yaml", "cluster-types/x/y.yaml"]
    text = "on:\n  push:\n    paths: {}\njobs: {{}}\n"
    cases = [
        ("['**']", []), ("['*']", ["configs/a.yaml", "cluster-types/x/y.yaml"]), ("['*.yaml', 'c*/**']", []),
        ("['**', '!cluster-types/**']", ["cluster-types/x/y.yaml"]), ("['cluster-types/*']", files),
    ]
    for patterns, missed in cases:
        gap = paths_gap("f.yml", text.format(patterns), "push", files, "files")
        if not missed:
            assert gap is None, (patterns, gap)
            continue
        assert gap is not None, patterns
        assert gap.problem.endswith(f" leaves out {len(missed)} of the files: {', '.join(missed)}"), (patterns, gap)
    assert paths_gap("f.yml", "on:\n  push:\n    branches: [main]\njobs: {}\n", "push", files, "files") is None
    assert paths_gap("f.yml", "on: [push]\njobs: {}\n", "push", files, "files") is None
