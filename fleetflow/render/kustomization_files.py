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

Pure: the text of a kustomization file and paths in, the paths it leaves out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

import yaml

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
