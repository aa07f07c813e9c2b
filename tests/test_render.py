"""Rendering end to end through the CLI: layout, state, incremental, determinism, failure isolation."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from fleetflow.errors import Problems
from fleetflow.render.output import read_state
from tests.helpers import ENV_FILES, build_file_tree, make_plane, run_cli, tree_bytes


def render(main: Path, env: Path, out: Path, *extra: str) -> tuple[int, str]:
    result = run_cli("render", "--main", main, "--env", env, "--environment", "dev", "--output", out, *extra)
    return result.exit_code, result.output


def test_layout_and_state(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    code, output = render(main, env, out, "--main-commit", "a" * 40, "--env-commit", "b" * 40)
    assert code == 0, output
    files = tree_bytes(out)
    assert sorted(files) == [
        ".fleetflow/index/all.json",
        ".fleetflow/state.json",
        ".fleetflow/state/cloud-eu.json",
        ".fleetflow/state/edge-line1.json",
        "cloud-eu/app-dev/namespace.yaml",
        "cloud-eu/app-dev/platform-config.yaml",
        "cloud-eu/app-dev/reconciler.yaml",
        "edge-line1/app-dev/namespace.yaml",
        "edge-line1/app-dev/platform-config.yaml",
        "edge-line1/app-dev/reconciler.yaml",
    ]
    config = files["edge-line1/app-dev/platform-config.yaml"].decode()
    assert "LOG_LEVEL: debug" in config  # the edge ConfigMap is more specific than the env-wide one
    assert 'REPLICAS: "1"' in config
    assert "namespace: dev-team-a-app-dev" in config
    unreadable = Problems()
    state = read_state(out, unreadable)
    assert state is not None and not unreadable
    assert state.environment == "dev"
    assert state.main_commit == "a" * 40 and state.env_commit == "b" * 40
    assert sorted(state.assignments) == ["cloud-eu/app-dev", "edge-line1/app-dev"]
    assert [c.name for c in state.clusters] == ["cloud-eu-1", "edge-line1-1"]
    assert state.clusters[0].status_context == "flux/cloud-eu-1"


def test_deterministic_bytes(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    render(main, env, tmp_path / "a")
    render(main, env, tmp_path / "b")
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")


def test_rerender_without_change_writes_nothing(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    render(main, env, out)
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    code, output = render(main, env, out, "--format", "json")
    assert code == 0
    data = json.loads(output)["result"]
    assert data["written"] == [] and data["deleted"] == [] and data["rendered"] == 0
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == mtimes


def test_incremental_equals_full_and_reports_changes(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    render(main, env, out)
    (out / "README.md").write_text("left alone")
    # change a value that applies only to edge cluster types
    cfg = env / "configs.yaml"
    cfg.write_text(cfg.read_text().replace("LOG_LEVEL: debug", "LOG_LEVEL: trace"))
    code, output = render(main, env, out, "--format", "json")
    assert code == 0, output
    data = json.loads(output)["result"]
    assert data["rendered"] == 1
    assert data["changes"]["changed"] == ["edge-line1/app-dev"]
    assert data["changes"]["configKeys"] == ["edge: LOG_LEVEL (changed)"]
    # the one shard whose cluster type changed is rewritten, then the index's part and the index
    assert data["written"] == [
        "edge-line1/app-dev/platform-config.yaml", ".fleetflow/state/edge-line1.json", ".fleetflow/index/all.json",
        ".fleetflow/state.json",
    ]
    full = tmp_path / "full"
    render(main, env, full)
    incremental = tree_bytes(out)
    assert incremental.pop("README.md") == b"left alone"
    assert incremental == tree_bytes(full)


def test_removed_assignments_lose_their_folders(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    render(main, env, out)
    (out / "cloud-eu" / "notes.txt").write_text("a file in a cluster-type folder is left alone")
    types = env / "cluster-types" / "types.yaml"
    types.write_text(types.read_text().replace("region: eu\n    kind: cloud", "region: us\n    kind: cloud"))
    code, output = render(main, env, out, "--format", "json")
    assert code == 0, output
    assert json.loads(output)["result"]["changes"]["removed"] == ["cloud-eu/app-dev"]
    assert not (out / "cloud-eu" / "app-dev").exists()
    assert (out / "cloud-eu" / "notes.txt").exists()


def test_full_flag_rerenders_and_repairs(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    render(main, env, out)
    expected = tree_bytes(out)
    (out / "cloud-eu" / "app-dev" / "reconciler.yaml").write_text("hand edit")
    (out / "cloud-eu" / "app-dev" / "stray.yaml").write_text("stray")
    code, _ = render(main, env, out, "--full")
    assert code == 0
    # the hand edit of a file fleetflow wrote is repaired; a file it did not write is kept (ownership)
    assert tree_bytes(out) == {**expected, "cloud-eu/app-dev/stray.yaml": b"stray"}


def test_keep_last_good_holds_back_invalid_assignments(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    render(main, env, out)
    before = tree_bytes(out)
    # a schema that only the edge assignment violates, plus a change that touches both assignments
    build_file_tree(
        main,
        {
            "schemas/s.yaml": """
        apiVersion: fleetflow.dev/v1alpha1
        kind: ConfigSchema
        metadata:
          name: levels
        spec:
          schema:
            properties:
              LOG_LEVEL: {enum: [info, warn]}
    """
        },
    )
    cfg = env / "configs.yaml"
    cfg.write_text(cfg.read_text().replace('REPLICAS: "1"', 'REPLICAS: "2"'))
    code, output = render(main, env, out)
    assert code == 1
    assert "edge-line1/app-dev" in output and "LOG_LEVEL" in output
    assert tree_bytes(out) == before  # default: nothing written
    code, output = render(main, env, out, "--keep-last-good")
    assert code == 1
    assert "held back" in output
    after = tree_bytes(out)
    for name in ("namespace.yaml", "platform-config.yaml", "reconciler.yaml"):
        assert after[f"edge-line1/app-dev/{name}"] == before[f"edge-line1/app-dev/{name}"]
    assert after["cloud-eu/app-dev/platform-config.yaml"] != before["cloud-eu/app-dev/platform-config.yaml"]
    assert 'REPLICAS: "2"' in after["cloud-eu/app-dev/platform-config.yaml"].decode()


def test_empty_renders_are_dropped_and_other_content_types(tmp_path: Path) -> None:
    main, env = make_plane(
        tmp_path,
        main={
            "templates/namespace.yaml": """
            apiVersion: fleetflow.dev/v1alpha1
            kind: Template
            metadata:
              name: namespace
            spec:
              type: namespace
              manifests:
                - "{% if Labels.get('needs-namespace') %}kind: Namespace{% endif %}"
        """,
            "templates/config.yaml": """
            apiVersion: fleetflow.dev/v1alpha1
            kind: Template
            metadata:
              name: config
            spec:
              type: config
              contentType: json
              manifests:
                - "{{ ConfigData | toJson }}"
        """,
        },
    )
    out = tmp_path / "out"
    code, output = render(main, env, out)
    assert code == 0, output
    files = tree_bytes(out)
    assert "cloud-eu/app-dev/namespace.yaml" not in files
    assert json.loads(files["cloud-eu/app-dev/platform-config.json"]) == {
        "LOG_LEVEL": "info",
        "REPLICAS": "1",
    }


def test_state_json_is_unreadable_then_full_render(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    build_file_tree(out, {".fleetflow/state.json": "{ not json"})
    code, output = render(main, env, out)
    assert code == 0
    assert "unreadable" in output


def test_a_state_json_from_a_newer_fleetflow_is_refused_and_nothing_written(tmp_path: Path) -> None:
    """Rendering over it would write this version's state over the newer one's (it was, until 2026-11-28)."""
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    code, _ = render(main, env, out)
    assert code == 0
    state = out / ".fleetflow" / "state.json"
    state.write_text(state.read_text().replace('"version": 3,', '"version": 4,', 1))
    (out / "cloud-eu" / "app-dev" / "namespace.yaml").unlink()  # a file the next render would write back
    before = tree_bytes(out)
    code, output = render(main, env, out)
    assert code == 1 and "state version 4 was written by a newer fleetflow" in output, output
    assert "upgrade fleetflow" in output and tree_bytes(out) == before


def test_a_template_that_fails_for_every_assignment_is_one_problem(tmp_path: Path) -> None:
    """"One message per problem": a template that fails the same way for each assignment it renders gave a line per
    assignment until 2026-11-28 (9 in the example's dev, 100,000 at 100k; a bad-input hunt). Now one problem names
    the first assignment, how many more and a few of them; a problem that differs per assignment stays its own."""
    example = Path(__file__).resolve().parent.parent / "examples" / "control-plane"
    shutil.copytree(example, tmp_path / "cp")
    template = tmp_path / "cp" / "main" / "templates" / "kubernetes-namespace.yaml"
    template.write_text(template.read_text().replace("name: {{ Namespace }}", "name: {{ Namespace.nope.deeper }}"))
    result = run_cli("validate", "--main", tmp_path / "cp" / "main", "--env", tmp_path / "cp" / "envs" / "dev",
                     "--format", "json")
    assert result.exit_code == 1
    [problem] = json.loads(result.output)["problems"]
    assert problem["location"]["file"].endswith("kubernetes-namespace.yaml") and problem["location"]["line"] == 19
    assert problem["message"].startswith(
        "template 'kubernetes-namespace', manifest 1, rendering assignment aks-westeurope/observability-dev: missing "
        "key: Namespace is a string, it has no key 'nope' (and the same in 8 more assignments: "
        "aks-westeurope/orders-api-dev, "
        "edge-hamburg-line1/inventory-sync-dev,"), problem["message"]
    assert problem["message"].endswith(", ...)")


def test_a_rendered_text_that_is_not_yaml_is_shown_by_explain_rendered(tmp_path: Path) -> None:
    """The YAML check names "line 10 of what it renders", a text fleetflow never writes (the assignment fails):
    until 2026-11-29 nothing showed it. Its hint now names the command that does, for the first assignment named
    (the same mistake in 9 assignments is still one problem), and ``explain --rendered`` shows every manifest of
    the assignment's templates, that text too, its lines numbered as the message counts them; a manifest that
    fails to render shows its problem, and the others are shown all the same."""
    example = Path(__file__).resolve().parent.parent / "examples" / "control-plane"
    shutil.copytree(example, tmp_path / "cp")
    template = tmp_path / "cp" / "main" / "templates" / "kubernetes-namespace.yaml"
    template.write_text(template.read_text().replace(
        "          fleetflow.dev/workload: {{ Workload }}\n",
        "          fleetflow.dev/workload: {{ Workload }}\n        finalizers: [{{ Workload }}\n", 1))
    main, env = tmp_path / "cp" / "main", tmp_path / "cp" / "envs" / "dev"
    result = run_cli("validate", "--main", main, "--env", env, "--format", "json")
    assert result.exit_code == 1
    [problem] = json.loads(result.output)["problems"]
    assert problem["message"].startswith(
        "template 'kubernetes-namespace', manifest 1, rendering assignment aks-westeurope/observability-dev: renders "
        "text that is not YAML (contentType: yaml): did not find expected ',' or ']' at line 10 of what it renders "
        "(while parsing a flow sequence at line 9) (and the same in 8 more assignments: "), problem["message"]
    # the command names the folders given (a command to paste: the placeholders "--main DIR --env DIR" until the
    # lead's review, 2026-11-29); render's and plan's hints name them too
    assert problem["hint"].endswith(
        f"; see what it renders: fleetflow explain --main {main} --env {env} --environment dev --assignment "
        "aks-westeurope/observability-dev --rendered"), problem["hint"]
    for command in ("render", "plan"):
        refused = run_cli(command, "--main", main, "--env", env, "--environment", "dev", "--output", tmp_path / "out",
                          "--format", "json")
        assert refused.exit_code == 1 and json.loads(refused.output)["problems"][0]["hint"] == problem["hint"]

    explain = tuple(shlex.split(problem["hint"].split("see what it renders: fleetflow ")[1]))
    assert explain == ("explain", "--main", str(main), "--env", str(env), "--environment", "dev", "--assignment",
                       "aks-westeurope/observability-dev", "--rendered")
    result = run_cli(*explain)
    assert result.exit_code == 0, result.output
    text = result.output
    namespace = text.index("== aks-westeurope/observability-dev/namespace.yaml: template 'kubernetes-namespace' "
                           "(namespaceService), manifest 1, at ")
    assert text.index("/reconciler.yaml: template 'flux-reconciler' (reconciler), manifest 2") < namespace
    # the line the problem names is marked '>' (until 2026-11-29 nothing pointed at it among the numbered lines)
    assert ("   9 |   finalizers: [observability\n> 10 |     fleetflow.dev/deployment-target: observability-dev\n"
            "  11 |     pod-security.kubernetes.io/enforce: restricted\n") in text
    assert text.count("\n> ") == 1
    assert "   error: " in text[namespace:] and "at line 10 of what it renders" in text[namespace:]
    assert "/platform-config.yaml: template 'configmap-config' (configType), manifest 1" in text
    assert "LOG_LEVEL: debug" in text
    shown = json.loads(run_cli(*explain, "--format", "json").output)["result"]
    assert [(m["file"].rsplit("/", 1)[1], m["manifest"]) for m in shown["manifests"]] == [
        ("reconciler.yaml", 1), ("reconciler.yaml", 2), ("namespace.yaml", 1), ("platform-config.yaml", 1)]
    broken = shown["manifests"][2]
    assert broken["text"].splitlines()[8] == "  finalizers: [observability"
    assert broken["problem"]["location"]["line"] == 16 and "line 10 of what it renders" in broken["problem"]["message"]
    assert broken["problemLine"] == 10 and shown["manifests"][0]["problemLine"] is None
    assert shown["manifests"][0]["problem"] is None and shown["problems"] == []

    # a manifest that fails to render: its problem, and the rest shown
    template.write_text(template.read_text().replace("[{{ Workload }}", "[{{ Workload.nope }}"))
    result = run_cli(*explain)
    assert result.exit_code == 0, result.output
    assert "   does not render: " in result.output and "Workload is a string, it has no key 'nope'" in result.output
    assert "\n> " not in result.output  # a problem in the template's own lines names no line of a text
    assert "LOG_LEVEL: debug" in result.output and "kind: Kustomization" in result.output
    result = run_cli(*explain, "--key", "LOG_LEVEL")
    assert result.exit_code == 2 and "--key and --rendered do not go together" in result.output


def test_explain_shows_provenance_and_overrides(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    result = run_cli(
        "explain", "--main", main, "--env", env, "--environment", "dev", "--assignment", "edge-line1/app-dev"
    )
    assert result.exit_code == 0, result.output
    assert "LOG_LEVEL = 'debug'" in result.output
    assert "from edge at" in result.output and "configs.yaml:19" in result.output
    assert "overrides 'info' from env-wide at" in result.output
    result = run_cli(
        "explain",
        "--main",
        main,
        "--env",
        env,
        "--environment",
        "dev",
        "--assignment",
        "edge-line1/app-dev",
        "--key",
        "REPLICAS",
        "--format",
        "json",
    )
    data = json.loads(result.output)["result"]
    assert [v["key"] for v in data["values"]] == ["REPLICAS"]
    assert data["values"][0]["from"]["configMap"] == "env-wide"
    assert data["values"][0]["from"]["line"] == 9


def test_explain_finds_and_tells_apart_keys_that_hold_dots(tmp_path: Path) -> None:
    """ConfigMap keys such as ``spring.datasource.url`` hold dots: ``--key spring.datasource.url`` said the key was
    not set (the key was split at its dots), and a top-level ``x.y`` and ``y`` under ``x`` were both shown as
    ``x.y``, the top-level one hidden by ``--key x.y`` (a bad-input hunt, 2026-11-28). A key with a dot is shown in
    quotes; ``--key`` finds a path written with dots or as shown."""
    configs = ENV_FILES["configs.yaml"].replace('REPLICAS: "1"\n', (
        'REPLICAS: "1"\n          spring.datasource.url: jdbc:postgresql://db/app\n'
        '          x.y: top\n          x:\n            y: nested\n'), 1)
    main, env = make_plane(tmp_path, env={"configs.yaml": configs})

    def explain(*key: str) -> str:
        result = run_cli("explain", "--main", main, "--env", env, "--environment", "dev", "--assignment",
                         "cloud-eu/app-dev", *key)
        assert result.exit_code == 0, result.output
        return result.stdout

    whole = explain()
    assert """"spring.datasource.url" = 'jdbc:postgresql://db/app'""" in whole
    assert """"x.y" = 'top'""" in whole and "x.y = 'nested'" in whole
    assert """"spring.datasource.url" = 'jdbc""" in explain("--key", "spring.datasource.url")
    both = explain("--key", "x.y")
    assert """"x.y" = 'top'""" in both and "x.y = 'nested'" in both
    only_top = explain("--key", '"x.y"')
    assert """"x.y" = 'top'""" in only_top and "'nested'" not in only_top


def test_explain_unknown_assignment(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    result = run_cli("explain", "--main", main, "--env", env, "--environment", "dev", "--assignment", "x/y")
    assert result.exit_code == 1
    assert "not scheduled" in result.output and "cloud-eu/app-dev" in result.output
    assert "did you mean" not in result.output  # nothing close: no guess


def test_explain_says_which_assignment_or_key_was_meant(tmp_path: Path) -> None:
    """A name typed by hand: a typo, the folder under ``--output`` (copied from ``ls out/dev``) or another
    letter case gets "did you mean" with the name that works (the list of the first ten alone hid it among 10,000
    assignments). The folder as a shell completes it, with a trailing ``/``, is that assignment."""
    main, env = make_plane(tmp_path)
    explain = ("explain", "--main", main, "--env", env, "--environment", "dev", "--assignment")
    for typed in ("cloud-eu/app-dv", "out/dev/cloud-eu/app-dev", "Cloud-EU/app-dev"):
        result = run_cli(*explain, typed)
        assert result.exit_code == 1, result.output
        assert "did you mean --assignment cloud-eu/app-dev?" in result.output, result.output
    result = run_cli(*explain, "cloud-eu/app-dev/", "--key", "LOG_LEVEL")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("cloud-eu/app-dev (environment dev)") and "LOG_LEVEL = " in result.stdout
    for typed in ("log_level", "LOG_LEVL"):
        result = run_cli(*explain, "cloud-eu/app-dev", "--key", typed)
        assert result.exit_code == 1, result.output
        assert f"key '{typed}' is not set for cloud-eu/app-dev" in result.output
        assert "did you mean --key LOG_LEVEL? Or run without --key to list every key" in result.output
    result = run_cli(*explain, "cloud-eu/app-dev", "--key", "NOTHING_LIKE_IT")
    assert result.exit_code == 1 and "did you mean" not in result.output
    assert "run without --key to list every key" in result.output


def test_plan_writes_nothing_and_shows_a_diff(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    render(main, env, out)
    before = tree_bytes(out)
    cfg = env / "configs.yaml"
    cfg.write_text(cfg.read_text().replace("LOG_LEVEL: info", "LOG_LEVEL: warn"))
    result = run_cli("plan", "--main", main, "--env", env, "--environment", "dev", "--output", out)
    assert result.exit_code == 0, result.output
    assert "changed (1):" in result.output and "cloud-eu/app-dev" in result.output
    assert "-  LOG_LEVEL: info" in result.output and "+  LOG_LEVEL: warn" in result.output
    assert tree_bytes(out) == before
    result = run_cli(
        "plan",
        "--main",
        main,
        "--env",
        env,
        "--environment",
        "dev",
        "--output",
        tmp_path / "none",
        "--format",
        "json",
    )
    data = json.loads(result.output)["result"]
    assert data["changes"]["added"] == ["cloud-eu/app-dev", "edge-line1/app-dev"]
    assert not (tmp_path / "none").exists()


def test_validate_all_environments(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    result = run_cli("validate", "--main", main, "--env", env)
    assert result.exit_code == 0, result.output
    assert "ok: dev: 2 assignments" in result.output


def test_ignore_file_and_hidden_folders(tmp_path: Path) -> None:
    main, env = make_plane(
        tmp_path,
        env={
            ".fleetflowignore": "helm/\n*.values.yaml\n",
            "helm/chart.yaml": "apiVersion: v2\nkind: NotOurs\n",
            "x.values.yaml": "replicas: 3\n",
            ".github/workflows/ci.yaml": "on: push\n",
        },
    )
    code, output = render(main, env, tmp_path / "out")
    assert code == 0, output


def test_render_into_copy_of_previous_output_is_idempotent(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    out = tmp_path / "out"
    render(main, env, out)
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    _, output = render(main, env, copy, "--format", "json")
    assert json.loads(output)["result"]["written"] == []


STATUS_TEMPLATE = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Template
    metadata:
      name: reporter
    spec:
      type: status
      manifests:
        - |
          kind: Alert
          cluster-type: {{ ClusterType }}
          contexts: {{ Clusters | map(attribute="statusContext") | join(",") }}
"""


def test_status_reporter_is_rendered_once_per_cluster_type(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path, main={"templates/reporter.yaml": STATUS_TEMPLATE})
    types = env / "cluster-types" / "types.yaml"
    types.write_text(types.read_text().replace("configType: config", "configType: config\n  statusReporter: reporter"))
    out = tmp_path / "out"
    code, output = render(main, env, out)
    assert code == 0, output
    files = tree_bytes(out)
    expected = b"kind: Alert\ncluster-type: cloud-eu\ncontexts: flux/cloud-eu-1\n"
    assert files["cloud-eu/_status/reporter.yaml"] == expected
    assert "edge-line1/_status/reporter.yaml" in files
    # an incremental run keeps it (the sweep of cluster-type folders leaves _status alone) and writes nothing
    code, output = render(main, env, out, "--format", "json", "--full")
    assert json.loads(output)["result"]["written"] == [] and tree_bytes(out) == files
    # a reporter that is no longer configured goes away
    types.write_text(types.read_text().replace("\n  statusReporter: reporter", "", 1))
    code, output = render(main, env, out, "--format", "json")
    assert code == 0 and json.loads(output)["result"]["deleted"] == ["cloud-eu/_status/reporter.yaml"]
    assert not (out / "cloud-eu" / "_status").exists() and (out / "edge-line1" / "_status").is_dir()


def test_status_reporter_must_be_a_status_template(tmp_path: Path) -> None:
    main, env = make_plane(tmp_path)
    types = env / "cluster-types" / "types.yaml"
    types.write_text(types.read_text().replace("configType: config", "configType: config\n  statusReporter: flux", 1))
    code, output = render(main, env, tmp_path / "out")
    assert code == 1 and "statusReporter names template 'flux' of type reconciler, not status" in output
