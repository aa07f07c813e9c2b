"""A template manifest that renders nothing for every assignment it applies to: a warning that names the manifest,
its ``{% if %}`` and the environment it is false in (until 2026-11-29 ``validate`` said "ok" and no file was
written). Only from a render that rendered every assignment the template applies to: an incremental render, which
keeps unchanged assignments unread, sees part of them and says nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fleetflow.cli.common import load
from fleetflow.errors import Location
from fleetflow.render.empty_manifests import empty_manifest_warnings
from fleetflow.render.pipeline import Meta, render_environment
from fleetflow.render.templates import TemplateEngine, TemplateSource
from tests.helpers import run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "control-plane"
NAMESPACE = Path("main") / "templates" / "kubernetes-namespace.yaml"


def example_with_namespace_if(tmp_path: Path, condition: str) -> Path:
    """A copy of the example whose namespace template's one manifest is wrapped in ``{%- if condition %}``."""
    root = tmp_path / "cp"
    shutil.copytree(EXAMPLE, root)
    template = root / NAMESPACE
    text = template.read_text()
    first = "    - |\n      apiVersion: v1\n"
    assert text.count(first) == 1
    text = text.replace(first, f"    - |\n      {{%- if {condition} %}}\n      apiVersion: v1\n")
    template.write_text(text.rstrip("\n") + "\n      {%- endif %}\n")
    return root


def validate(root: Path, *extra: str) -> tuple[int, dict[str, object]]:
    result = run_cli("validate", "--main", root / "main", "--env", root / "envs" / "dev", "--format", "json", *extra)
    return result.exit_code, json.loads(result.output)


def test_a_manifest_whose_if_is_never_true_is_a_warning_at_its_line(tmp_path: Path) -> None:
    """Environments are lower case: ``Environment == 'Dev'`` is false for all 9 assignments of the namespace
    template in dev (the example's 2 VM assignments have their own), and no namespace.yaml is written."""
    root = example_with_namespace_if(tmp_path, "Environment == 'Dev'")
    code, reply = validate(root)
    assert code == 0, reply
    [warning] = reply["warnings"]  # type: ignore[misc]
    assert warning["message"] == (
        "template 'kubernetes-namespace', manifest 1 rendered nothing for any of the 9 assignments it applies to in "
        "environment dev: no file of it is written for them")
    assert warning["location"] == {"file": str(root / NAMESPACE), "line": 16, "column": None}  # its {% if %}
    assert warning["hint"] == (
        "its {% if %} may never be true: {% if Environment == 'Dev' %} is false for every one of them; no "
        "environment is named 'Dev': did you mean 'dev'? Environment is 'dev' here; the environments are dev, "
        "prod, qa")
    code, reply = validate(root, "--strict")
    assert code == 1, reply


@pytest.mark.parametrize("condition", ["Environment == 'prod'", "Environment in ['qa', 'prod']",
                                       "Environment != 'dev'"])
def test_a_manifest_meant_for_other_environments_is_no_warning(tmp_path: Path, condition: str) -> None:
    """An {% if %} that names only environments main defines, this one not among them (or excluded), is meant so;
    nor is the example's vm-namespace a warning (a comment only: nothing to create on a VM, on purpose). The same
    manifest with a condition that is not about environments is warned about (so this test fails where no
    warning is ever given)."""
    code, reply = validate(example_with_namespace_if(tmp_path / "meant", condition))
    assert (code, reply["warnings"]) == (0, []), reply
    code, reply = validate(example_with_namespace_if(tmp_path / "config", "ConfigData.get('NAMESPACED')"))
    [warning] = reply["warnings"]  # type: ignore[misc]
    assert warning["hint"] == (
        "its {% if %} may never be true: {% if ConfigData.get('NAMESPACED') %} is false for every one of them; a "
        "manifest meant for other environments only renders nothing in this one, as meant")


def test_an_incremental_render_says_nothing_from_part_of_the_assignments(tmp_path: Path) -> None:
    """A render that keeps unchanged assignments unread (the previous state's) has not seen what the template renders
    for them: no verdict. A full render (no previous state, or ``--full``: ``reuse=False``) gives it."""
    root = example_with_namespace_if(tmp_path, "Environment == 'Dev'")
    env = root / "envs" / "dev"
    plane = load(root / "main", env)
    first = render_environment(plane, "dev", meta=Meta())
    said = [w.message for w in first.warnings]
    assert any("'kubernetes-namespace', manifest 1 rendered nothing" in m for m in said), said
    # one ConfigMap value changed: a few assignments render again, the others are kept as they were
    configs = env / "configs" / "workloads.yaml"
    configs.write_text(configs.read_text().replace('SCRAPE_INTERVAL: "15s"', 'SCRAPE_INTERVAL: "20s"', 1))
    again = render_environment(load(root / "main", env), "dev", previous=first.state, meta=Meta())
    assert 0 < len(again.rendered) < len(first.rendered), again.rendered
    assert not any("rendered nothing" in w.message for w in again.warnings), again.warnings
    full = render_environment(load(root / "main", env), "dev", previous=first.state, meta=Meta(), reuse=False)
    assert any("rendered nothing" in w.message for w in full.warnings), full.warnings


def test_each_manifest_is_counted_on_its_own() -> None:
    """The second manifest of a template loops over a list that is empty for every assignment: it is named, its
    {% for %} in the hint, at its line; the first renders, so the template's file is written and the message does
    not say it is not."""
    source = TemplateSource(
        name="tpl", type="config", content_type="yaml",
        manifests=("kind: A\n",
                   "kind: B\nitems:\n{%- for item in ConfigData.extra %}\n  - {{ item }}\n{%- endfor %}\n"),
        location=Location("templates/tpl.yaml", 1),
        manifest_locations=(Location("templates/tpl.yaml", 10), Location("templates/tpl.yaml", 20)),
    )
    compiled = TemplateEngine().compile(source)
    for _ in range(3):
        assert compiled.render({"ConfigData": {"extra": []}}, "assignment a/b") == b"kind: A\n---\nkind: B\nitems:\n"
    assert empty_manifest_warnings("dev", ["dev"], {"tpl": 3}, {"tpl": compiled}) == []  # "items:" is text
    source = TemplateSource(**{**source.__dict__, "manifests": (
        "kind: A\n", "{%- for item in ConfigData.extra %}\n- {{ item }}\n{%- endfor %}\n")})
    compiled = TemplateEngine().compile(source)
    for _ in range(3):
        assert compiled.render({"ConfigData": {"extra": []}}, "assignment a/b") == b"kind: A\n"
    [warning] = empty_manifest_warnings("dev", ["dev"], {"tpl": 3}, {"tpl": compiled})
    assert warning.message == ("template 'tpl', manifest 2 rendered nothing for any of the 3 assignments it applies "
                               "to in environment dev")
    assert warning.location == Location("templates/tpl.yaml", 20)
    assert (warning.hint or "").startswith("{% for item in ConfigData.extra %} loops over nothing for every one")
    # rendered for 2 of the 3 assignments it applies to (the third kept from before): part of the view, no verdict
    assert empty_manifest_warnings("dev", ["dev"], {"tpl": 4}, {"tpl": compiled}) == []


REPORTER = Path("main") / "templates" / "flux-status-reporter.yaml"


def example_with_reporter_if(tmp_path: Path, condition: str) -> Path:
    """A copy of the example whose status reporter's two manifests are each wrapped in ``{%- if condition %}``."""
    root = tmp_path / "cp"
    shutil.copytree(EXAMPLE, root)
    template = root / REPORTER
    text = template.read_text()
    alert = "      apiVersion: notification.toolkit.fluxcd.io/v1beta3\n      kind: Alert\n"
    first, second = "    - |\n      # clusters of", f"    - |\n{alert}"
    end = "        commitStatusExpr: \"'flux/' + '${CLUSTER_NAME}'\"\n"
    assert text.count(first) == text.count(second) == text.count(end) == 1
    text = text.replace(first, f"    - |\n      {{%- if {condition} %}}\n      # clusters of")
    text = text.replace(end, f"{end}      {{%- endif %}}\n")
    text = text.replace(second, f"    - |\n      {{%- if {condition} %}}\n{alert}")
    template.write_text(text.rstrip("\n") + "\n      {%- endif %}\n")
    return root


def test_a_status_reporter_that_renders_nothing_is_a_warning(tmp_path: Path) -> None:
    """A status reporter renders once per cluster type into ``<clusterType>/_status/`` (the example's makes Flux post
    the commit statuses the gate reads). Wrapped in an ``{% if %}`` never true, it wrote no file for either of dev's
    2 cluster types naming it and ``validate`` said "ok" (until 2026-11-29): the clusters then report nothing and
    the gate waits until its timeout. Now one warning per manifest, at its ``{% if %}``, counting cluster types, and
    the hint says what the missing file costs; ``--strict`` fails."""
    root = example_with_reporter_if(tmp_path, "Environment == 'Dev'")
    code, reply = validate(root)
    assert code == 0, reply
    warnings = reply["warnings"]
    assert [(w["message"], w["location"]["line"]) for w in warnings] == [  # type: ignore[index,union-attr]
        ("status reporter template 'flux-status-reporter', manifest 1 rendered nothing for any of the 2 cluster types "
         "it applies to in environment dev: no file of it is written for them", 27),
        ("status reporter template 'flux-status-reporter', manifest 2 rendered nothing for any of the 2 cluster types "
         "it applies to in environment dev: no file of it is written for them", 43),
    ]
    assert warnings[0]["hint"] == (  # type: ignore[index]
        "its {% if %} may never be true: {% if Environment == 'Dev' %} is false for every one of them; no "
        "environment is named 'Dev': did you mean 'dev'? Environment is 'dev' here; the environments are dev, "
        "prod, qa; with no file in their _status/ folders, the clusters of these cluster types have nothing that "
        "makes them report their rollout (unless set up otherwise), and the rollout gate waits for the statuses of "
        "the Clusters it expects until its timeout")
    code, reply = validate(root, "--strict")
    assert code == 1, reply
    # meant for another environment: no warning, as for an assignment's manifest
    code, reply = validate(example_with_reporter_if(tmp_path / "meant", "Environment == 'prod'"))
    assert (code, reply["warnings"]) == (0, []), reply


def test_a_reporter_kept_from_the_previous_render_gives_no_verdict(tmp_path: Path) -> None:
    """An incremental render leaves a reporter whose inputs did not change unrendered (its ``_status/`` folder as it
    is): it has not seen what the reporter renders, and says nothing; a full render says it."""
    root = example_with_reporter_if(tmp_path, "Environment == 'Dev'")
    env = root / "envs" / "dev"
    first = render_environment(load(root / "main", env), "dev", meta=Meta())
    assert any("status reporter template" in w.message for w in first.warnings), first.warnings
    again = render_environment(load(root / "main", env), "dev", previous=first.state, meta=Meta())
    assert again.kept_reporters and not any("status reporter" in w.message for w in again.warnings), again.warnings
    full = render_environment(load(root / "main", env), "dev", previous=first.state, meta=Meta(), reuse=False)
    assert any("status reporter template" in w.message for w in full.warnings), full.warnings
