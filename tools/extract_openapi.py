"""Cut the subset of GitHub's OpenAPI description that the test stand-in server implements.

Source: the npm package ``@octokit/openapi`` **23.0.2** (``generated/api.github.com.json``, OpenAPI 3.0.3,
``info.version`` 23.0.2), which republishes GitHub's own description of api.github.com.

The subset holds:

* the paths/operations listed in ``tests/ghstub/operations.py`` (``OPERATIONS``);
* the webhook payloads (``x-webhooks``) of the events in ``WEBHOOK_EVENTS`` (push, status, pull_request,
  repository_dispatch, workflow_dispatch), selected by their ``x-github.subcategory`` and, where listed,
  their action (pull_request: opened, closed, reopened, edited, synchronize);
* every ``components`` entry they reference, transitively.

``description``, ``summary``, ``example(s)``, ``externalDocs`` and ``x-github`` are stripped to keep the file
small (a schema *property* with one of those names is kept). Re-run after changing ``OPERATIONS``::

    python tools/extract_openapi.py                       # npm pack @octokit/openapi@23.0.2 into a temp dir
    python tools/extract_openapi.py --version 23.1.0      # another release
    python tools/extract_openapi.py --source path/to/api.github.com.json   # no download

The output (``tests/ghstub/openapi-subset.json``) is deterministic for a given input; it is indented down to
one line per path, webhook and component so that a diff shows which entries changed.
"""

from __future__ import annotations

import argparse
import json
import runpy
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

PACKAGE = "@octokit/openapi"
DEFAULT_VERSION = "23.0.2"
MEMBER = "package/generated/api.github.com.json"
ROOT = Path(__file__).resolve().parent.parent
OPERATIONS_FILE = ROOT / "tests" / "ghstub" / "operations.py"
OUTPUT = ROOT / "tests" / "ghstub" / "openapi-subset.json"

STRIPPED_KEYS = frozenset({"description", "summary", "example", "examples", "externalDocs", "x-github", "tags"})
NAME_MAPS = frozenset({"properties", "patternProperties"})


def load_operations() -> tuple[list[tuple[str, str]], dict[str, tuple[str, ...]]]:
    """Read ``OPERATIONS`` and ``WEBHOOK_EVENTS`` from the stub without importing the test package."""
    namespace = runpy.run_path(str(OPERATIONS_FILE))
    return list(namespace["OPERATIONS"]), dict(namespace["WEBHOOK_EVENTS"])


def fetch_description(version: str, workdir: Path) -> dict[str, Any]:
    """``npm pack`` the package into ``workdir`` and load the api.github.com description from the tarball."""
    subprocess.run(
        ["npm", "pack", f"{PACKAGE}@{version}", "--silent", "--pack-destination", str(workdir)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    (tarball,) = workdir.glob("*.tgz")
    with tarfile.open(tarball) as archive:
        member = archive.extractfile(MEMBER)
        if member is None:
            raise SystemExit(f"{MEMBER} not found in {tarball.name}")
        data: dict[str, Any] = json.load(member)
    return data


def strip(node: Any, in_name_map: bool = False) -> Any:
    """Drop documentation-only keywords; keys of ``properties`` maps are names, never keywords."""
    if isinstance(node, dict):
        return {
            key: strip(value, key in NAME_MAPS and not in_name_map)
            for key, value in node.items()
            if in_name_map or key not in STRIPPED_KEYS
        }
    if isinstance(node, list):
        return [strip(item) for item in node]
    return node


def iter_refs(node: Any) -> Iterator[str]:
    """Every ``$ref`` string below ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from iter_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from iter_refs(item)


def collect_components(spec: dict[str, Any], roots: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """The ``components`` entries reachable from ``roots`` (already stripped), transitively."""
    found: dict[str, dict[str, Any]] = {}
    pending = [ref for root in roots for ref in iter_refs(root)]
    while pending:
        ref = pending.pop()
        parts = ref.split("/")
        if len(parts) != 4 or parts[:2] != ["#", "components"]:
            raise SystemExit(f"unsupported $ref {ref!r}")
        kind, name = parts[2], parts[3]
        if name in found.setdefault(kind, {}):
            continue
        entry = strip(spec["components"][kind][name])
        found[kind][name] = entry
        pending.extend(iter_refs(entry))
    return {kind: dict(sorted(entries.items())) for kind, entries in sorted(found.items())}


def wanted_webhook(name: str, hook: dict[str, Any], events: dict[str, tuple[str, ...]]) -> bool:
    """``name`` is e.g. ``pull-request-opened``: event ``pull_request``, action ``opened``."""
    event = hook.get("post", {}).get("x-github", {}).get("subcategory")
    if event not in events:
        return False
    actions = events[event]
    action = name.removeprefix(event.replace("_", "-")).lstrip("-")
    return not actions or action in actions


def build_subset(
    spec: dict[str, Any], operations: list[tuple[str, str]], events: dict[str, tuple[str, ...]]
) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for method, template in operations:
        try:
            operation = spec["paths"][template][method.lower()]
        except KeyError:
            raise SystemExit(f"{method} {template} is not in the description") from None
        paths.setdefault(template, {})[method.lower()] = strip(operation)
    hooks_in = spec.get("webhooks") or spec.get("x-webhooks") or {}
    webhooks = {
        name: {"post": strip(hook["post"])}
        for name, hook in sorted(hooks_in.items())
        if wanted_webhook(name, hook, events)
    }
    missing = set(events) - {hooks_in[name]["post"]["x-github"]["subcategory"] for name in webhooks}
    if missing:
        raise SystemExit(f"webhook events not found: {sorted(missing)}")
    return {
        "openapi": spec["openapi"],
        "info": {
            "title": spec["info"]["title"],
            "version": spec["info"]["version"],
            "x-source": f"{PACKAGE} generated/api.github.com.json, cut by tools/extract_openapi.py",
        },
        "paths": dict(sorted(paths.items())),
        "x-webhooks": webhooks,
        "components": collect_components(spec, [paths, webhooks]),
    }


def dump(node: Any, depth: int = 0, levels: int = 3) -> str:
    """JSON indented for the first ``levels`` levels, compact below."""
    if depth >= levels or not isinstance(node, dict) or not node:
        return json.dumps(node, ensure_ascii=False, separators=(",", ":"))
    pad = " " * (depth + 1)
    items = [f"{pad}{json.dumps(key)}: {dump(value, depth + 1, levels)}" for key, value in node.items()]
    return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", default=DEFAULT_VERSION, help=f"{PACKAGE} version (default %(default)s)")
    parser.add_argument("--source", type=Path, help="an already downloaded api.github.com.json")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)

    if args.source:
        spec = json.loads(args.source.read_text())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            spec = fetch_description(args.version, Path(tmp))
    operations, events = load_operations()
    subset = build_subset(spec, operations, events)
    text = dump(subset) + "\n"
    args.output.write_text(text)
    print(
        f"{args.output}: {len(operations)} operations, {len(subset['x-webhooks'])} webhooks, "
        f"{sum(len(v) for v in subset['components'].values())} components, {len(text.encode()) // 1024} KiB "
        f"(from {PACKAGE} {spec['info']['version']})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
