"""The ``BaseRepo`` pin on an environment branch: which ``main`` commit the environment runs.

Pure text in, text out. The file is rewritten with ruamel's round-trip mode, so comments, key order and quoting
that people wrote stay as they were; only ``spec.commit`` (and the hold annotation) change.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from fleetflow.model.documents import FLEETFLOW_API

PIN_FILE = "base-repo.yaml"
HOLD_ANNOTATION = "fleetflow.dev/hold"


@dataclass(frozen=True)
class Pin:
    commit: str | None
    hold: str | None  # why the environment is held (a rollback), or None
    present: bool = False  # the pin file holds a BaseRepo document (one without ``spec.commit`` included)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _base_repo_index(docs: list[object]) -> int | None:
    for i, doc in enumerate(docs):
        if isinstance(doc, CommentedMap) and doc.get("kind") == "BaseRepo":
            return i
    return None


def read_pin(text: str | None) -> Pin:
    if not text:
        return Pin(None, None)
    docs = list(_yaml().load_all(text))
    index = _base_repo_index(docs)
    if index is None:
        return Pin(None, None)
    doc = docs[index]
    assert isinstance(doc, CommentedMap)
    spec = doc.get("spec") or {}
    annotations = (doc.get("metadata") or {}).get("annotations") or {}
    commit = spec.get("commit")
    return Pin(str(commit) if commit else None, annotations.get(HOLD_ANNOTATION), present=True)


def write_pin(text: str | None, *, commit: str, repo: str, hold: str | None) -> str:
    """Return the file with ``spec.commit = commit`` and the hold annotation set (or removed when None)."""
    yaml = _yaml()
    docs = list(yaml.load_all(text)) if text else []
    index = _base_repo_index(docs)
    if index is None:
        doc = CommentedMap()
        doc["apiVersion"] = FLEETFLOW_API
        doc["kind"] = "BaseRepo"
        doc["metadata"] = CommentedMap(name="main")
        doc["spec"] = CommentedMap(repo=repo, branch="main", path=".", commit=commit)
        docs.append(doc)
    else:
        doc = docs[index]
        assert isinstance(doc, CommentedMap)
        if not isinstance(doc.get("spec"), dict):
            doc["spec"] = CommentedMap()
        doc["spec"]["commit"] = commit
    metadata = doc.setdefault("metadata", CommentedMap())
    annotations = metadata.get("annotations")
    if hold is not None:
        if not isinstance(annotations, dict):
            annotations = metadata["annotations"] = CommentedMap()
        annotations[HOLD_ANNOTATION] = hold
    elif isinstance(annotations, dict) and HOLD_ANNOTATION in annotations:
        del annotations[HOLD_ANNOTATION]
        if not annotations:
            del metadata["annotations"]
    out = io.StringIO()
    if len(docs) == 1:
        yaml.dump(docs[0], out)
    else:
        yaml.dump_all(docs, out)
    return out.getvalue()
