"""A hand-written kustomization file in the output, and the rendered files it leaves out.

Flux builds a Kustomization's ``spec.path`` from a ``kustomization.yaml`` (or ``.yml``, or ``Kustomization``) that
stands there, as it is; only when there is none does it generate one from every ``.yaml``/``.yml`` file below, and
a sub-folder that holds one is taken through it alone (fluxcd/pkg ``kustomize/kustomize_generator.go``:
``generateKustomization`` returns an existing file unchanged; ``scanManifests`` adds "a sub-directory [that]
contains an existing kustomization file" as one resource and does not descend into it; kustomize's
``konfig.RecognizedKustomizationFileNames``). Argo CD takes a source folder holding one as a Kustomize application
the same way (argo-cd ``util/app/discovery/discovery.go``: ``AppType`` is Kustomize when ``IsKustomization``
finds one of those names in the source's path). The Flux docs
recommend writing one ("It is recommended to generate the kustomization.yaml on your own and store it in Git",
kustomize-controller ``docs/spec/v1/kustomizations.md``, "Generating a kustomization.yaml file"), and a file
fleetflow renders that it does not list is applied by no cluster: the Kustomization applies the rest, reports
ready, and the gate passes on a commit whose new assignment never reached a cluster.

Pure: the text of a kustomization file and paths in, the paths it leaves out (:func:`left_out`); which folders
to look in (:func:`where_to_look`) and the warnings for the files found there (:func:`unlisted_warnings`), shared
by ``render``/``plan`` (files in a checkout: :func:`fleetflow.render.output.kustomization_warnings`) and
``schedule``/``promote`` (blobs of the GitOps branch: :func:`fleetflow.promotion.gitops.kustomization_warnings`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence

import yaml

from fleetflow.errors import Location, Problems

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_MANIFEST_SUFFIXES = (".yaml", ".yml")  # what Flux would have taken without the file (scanManifests)
_REMOTE = ("git::", "gh:", "ssh://", "https://", "http://", "git@", "github.com:", "github.com/")  # IsLocalRelativePath


def left_out(folder: str, text: bytes, paths: Iterable[str]) -> list[str] | None:
    """The ``paths`` (relative to the output root, files fleetflow writes) below ``folder`` (``""`` for the root)
    that the kustomization file ``text`` standing in ``folder`` includes neither as a file of its ``resources``
    (or the older ``bases``) nor through a folder it lists. None when the file does not read as a kustomization
    (Flux then fails the build, and says so itself)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    listed: set[str] = set()
    for key in ("resources", "bases"):
        entries = data.get(key) or []
        if not isinstance(entries, list):
            return None
        for entry in entries:
            if isinstance(entry, str) and not entry.lower().startswith(_REMOTE):
                listed.add(posixpath.normpath(posixpath.join(folder, entry)))
    prefix = f"{folder}/" if folder else ""
    missing: list[str] = []
    for path in sorted(paths):
        if not path.startswith(prefix) or not path.endswith(_MANIFEST_SUFFIXES):
            continue
        parts = path.split("/")
        if not any("/".join(parts[:n]) in listed for n in range(1, len(parts) + 1)):
            missing.append(path)
    return missing


def where_to_look(written: Sequence[str], foreign: Iterable[str]) -> tuple[list[str], list[str]]:
    """Where a kustomization file that could leave out ``written`` (the files a render writes, relative to the
    output root) stands: the folders to look up its names in (the output root ``""`` and each cluster-type folder
    written into, a Flux Kustomization's path: docs/reporting-status.md), and the kustomization files among
    ``foreign`` (the files the survey found that fleetflow did not write) deeper down, in an assignment's or a
    status folder. What is looked up grows with the cluster types written into, not with the assignments."""
    folders = sorted({"", *(path.split("/", 1)[0] for path in written)})
    deeper = sorted(path for path in foreign if path.count("/") >= 2
                    and path.rpartition("/")[2] in KUSTOMIZATION_NAMES)
    return folders, deeper


def unlisted_warnings(found: Mapping[str, bytes], written: Sequence[str],
                      located: Callable[[str], Location]) -> Problems:
    """A warning for each kustomization file in ``found`` (path relative to the output root -> its text) that
    leaves out files of ``written`` below it (:func:`left_out`); ``located`` gives a path's place as the user
    knows it (a file in a checkout, a path in the GitOps repo)."""
    below: dict[str, list[str]] = {}  # cluster-type folder -> the files written in it: what its files can leave out
    for path in written:
        below.setdefault(path.split("/", 1)[0], []).append(path)
    warnings = Problems()
    for path in sorted(found):
        folder, _, name = path.rpartition("/")
        missing = left_out(folder, found[path], below.get(folder.split("/", 1)[0], []) if folder else written)
        if not missing:
            continue
        where = f"{folder}/" if folder else "the output folder"
        first = posixpath.relpath(missing[0], folder or ".")
        files = "file" if len(missing) == 1 else "files"
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        warnings.add(
            f"{name} in {where} does not list {len(missing)} {files} this render writes there ({shown}): Flux and "
            f"Argo CD build {where} from the resources it lists, not from every YAML file, so no cluster applies "
            f"{'it' if len(missing) == 1 else 'them'}, and the clusters report success without them",
            located(path),
            f"add {'it' if len(missing) == 1 else 'them'} to its resources (- {first}"
            f"{', ...' if len(missing) > 1 else ''}), or delete {name} so that Flux and Argo CD take every YAML "
            f"file below {where}",
        )
    return warnings
