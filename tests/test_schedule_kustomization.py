"""A ``kustomization.yaml`` a person committed to the GitOps branch that leaves out files a schedule writes.

Flux builds a Kustomization's ``spec.path`` from a kustomization file that stands there, as it is (fluxcd/pkg
``kustomize/kustomize_generator.go``: ``generateKustomization`` returns an existing file unchanged, and only without
one generates it from every .yaml/.yml file; kustomize ``api/konfig`` ``RecognizedKustomizationFileNames``), and
Argo CD takes such a folder as a Kustomize application (argo-cd ``util/app/discovery/discovery.go``, ``AppType``).
The Flux docs recommend writing one ("It is recommended to generate the kustomization.yaml on your own and store it
in Git", kustomize-controller ``docs/spec/v1/kustomizations.md``). A deployment target added later is rendered into
its own folder, which such a file does not list: no cluster applies it, the Kustomization reports ready, and the gate
passes. ``render`` and ``plan`` warned of it on a checkout; until 2026-11-29 ``schedule`` and ``promote`` (the
workflows' path, a commit made from git objects, no checkout) said nothing. Now they give the same warning, read
from the blobs of the GitOps branch.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fleetflow.promotion.promote import PromoteResult, promote_many
from fleetflow.promotion.schedule import ScheduleOutcome, schedule_environment
from tests.fleet import Fleet, git, local_fleet
from tests.test_promotion import first_commit, roll_out

SECOND_TARGET = """
    - name: dev2
      environment: dev
      labels: {purpose: app}
      manifests: {repo: https://example.invalid/app, branch: main, path: ./dev2}
"""
ONLY_APP_DEV = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
                "  - app-dev/reconciler.yaml\n  - app-dev/namespace.yaml\n  - ./app-dev/platform-config.yaml\n")


def _hand_commit(fleet: Fleet, branch: str, files: dict[str, str]) -> None:
    """A person's commit of ``files`` on the GitOps repo's ``branch``."""
    work = fleet.root / "hand"
    shutil.rmtree(work, ignore_errors=True)
    git(fleet.root, "clone", "-q", "-b", branch, fleet.gitops_url, str(work))
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git(work, "add", "-A")
    git(work, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", "commit", "-q", "-m", "kustomization")
    git(work, "push", "-q", "origin", f"HEAD:{branch}")


def _add_target(fleet: Fleet) -> str:
    """A main commit that adds deployment target dev2: dev renders ``cloud/app-dev2/``."""
    app = (fleet.work / "workloads/app.yaml").read_text()
    return fleet.push_main({"workloads/app.yaml": app.rstrip("\n") + SECOND_TARGET})


def _kustomization_warnings(outcome: ScheduleOutcome) -> list[tuple[str, str | None, str | None]]:
    return [(w.message, w.location.file if w.location else None, w.hint) for w in outcome.warnings
            if "kustomization" in w.message.lower()]


def _rolled_out(tmp_path: Path, files: dict[str, str]) -> Fleet:
    """dev promoted and merged, then ``files`` committed on its GitOps branch by a person."""
    fleet = local_fleet(tmp_path)
    with fleet.context() as ctx:
        promote_many(ctx, None, first_commit(fleet))
    assert roll_out(fleet, "dev") == "success"
    _hand_commit(fleet, "dev", files)
    return fleet


def test_a_schedule_warns_of_a_kustomization_file_on_the_gitops_branch_that_leaves_out_what_it_writes(
        tmp_path: Path) -> None:
    fleet = _rolled_out(tmp_path, {"cloud/kustomization.yaml": ONLY_APP_DEV})
    new = _add_target(fleet)
    with fleet.context() as ctx:
        [promoted] = promote_many(ctx, None, new)
    assert promoted.schedule is not None and promoted.schedule.operation == "created"
    expected = (
        "kustomization.yaml in cloud/ does not list 3 files this render writes there (cloud/app-dev2/namespace.yaml, "
        "cloud/app-dev2/platform-config.yaml, cloud/app-dev2/reconciler.yaml): Flux and Argo CD build cloud/ from "
        "the resources it lists, not from every YAML file, so no cluster applies them, and the clusters report "
        "success without them",
        "cloud/kustomization.yaml",
        "add them to its resources (- app-dev2/namespace.yaml, ...), or delete kustomization.yaml so that Flux and "
        "Argo CD take every YAML file below cloud/",
    )
    assert _kustomization_warnings(promoted.schedule) == [expected]
    # promote's warnings (its CLI's JSON and text): the same, led by the environment
    assert f"dev: {expected[0]}" in [w.message for w in PromoteResult(promotions=[promoted]).warnings()]
    with fleet.context() as ctx:  # schedule alone (the workflows' scheduled run) says it too
        outcome = schedule_environment(ctx, "dev")
    assert outcome.operation == "unchanged"
    assert _kustomization_warnings(outcome) == [expected]


@pytest.mark.parametrize(("files", "warned"), [
    ({"cloud/kustomization.yaml": ONLY_APP_DEV}, True),
    ({"cloud/Kustomization": "resources: [app-dev/reconciler.yaml]\n"}, True),  # another name kustomize reads
    ({"kustomization.yml": "resources: [cloud/app-dev]\n"}, True),  # at the output root
    ({"cloud/app-dev2/Kustomization": "resources: [reconciler.yaml]\n"}, True),  # in the new assignment's folder
    ({"cloud/kustomization.yaml": "resources: [app-dev, app-dev2]\n"}, False),  # folders: each taken whole
    ({"kustomization.yaml": "resources: [cloud]\n"}, False),
    ({"cloud/kustomization.yaml": ONLY_APP_DEV.replace("  - ./app-dev/platform-config.yaml\n", "")
      + "  - app-dev/platform-config.yaml\n  - app-dev2/reconciler.yaml\n  - app-dev2/namespace.yaml\n"
      "  - app-dev2/platform-config.yaml\n"}, False),  # lists every file
    ({"cloud/kustomization.yaml.bak": "resources: []\n"}, False),  # not a name kustomize reads
])
def test_which_kustomization_files_on_the_gitops_branch_a_schedule_warns_of(
        tmp_path: Path, files: dict[str, str], warned: bool) -> None:
    fleet = _rolled_out(tmp_path, files)
    new = _add_target(fleet)
    with fleet.context() as ctx:
        [promoted] = promote_many(ctx, None, new)
    outcome = promoted.schedule
    assert outcome is not None and outcome.operation == "created"
    assert bool(_kustomization_warnings(outcome)) == warned, outcome.warnings
