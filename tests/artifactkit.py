"""Local stand-ins for ``actions/upload-artifact`` and ``actions/download-artifact`` under act (mapped with
``--local-repository`` at the pinned sha, as ``tests/actkit.py`` does for actions/checkout and
actions/create-github-app-token).

Same inputs and outputs as actions/upload-artifact v7.0.0 (its ``action.yml``: ``name``, ``path``,
``if-no-files-found``, ...; outputs ``artifact-id``, ``artifact-url``, ``artifact-digest``). It cannot reach
GitHub's artifact service (act runs offline here), so it copies the files under ``path`` to
``$FLEETFLOW_TEST_ARTIFACTS/run<run id>-<unique>/<name>/`` (act gives every run the same run id, so the
stand-in cannot check that a name is used once per run, as v4+ artifacts are immutable), and answers the URL form
its README documents: ``<server>/<owner>/<repo>/actions/runs/<run id>/artifacts/<id>``.
"""

from __future__ import annotations

from pathlib import Path

UPLOAD_ARTIFACT_ACTION = "actions/upload-artifact"

STANDIN = """\
# Test stand-in for actions/upload-artifact (tests/artifactkit.py): copies `path` to $FLEETFLOW_TEST_ARTIFACTS.
name: upload-artifact (stand-in)
description: test stand-in
inputs:
  name: {required: false, default: artifact}
  path: {required: true}
  if-no-files-found: {required: false, default: warn}
  retention-days: {required: false, default: "0"}
  compression-level: {required: false, default: "6"}
  overwrite: {required: false, default: "false"}
  include-hidden-files: {required: false, default: "false"}
  archive: {required: false, default: "true"}
outputs:
  artifact-id: {value: "${{ steps.upload.outputs.artifact-id }}"}
  artifact-url: {value: "${{ steps.upload.outputs.artifact-url }}"}
  artifact-digest: {value: "${{ steps.upload.outputs.artifact-digest }}"}
runs:
  using: composite
  steps:
    - id: upload
      shell: bash
      env:
        IN_NAME: ${{ inputs.name }}
        IN_PATH: ${{ inputs.path }}
        IN_IF_NO_FILES_FOUND: ${{ inputs.if-no-files-found }}
      run: python3 "$GITHUB_ACTION_PATH/upload.py"
"""

UPLOAD = """\
import hashlib, os, shutil, sys, tempfile, zlib

env = os.environ
source = env["IN_PATH"]
files = []
if os.path.isdir(source):
    for folder, _, names in os.walk(source):
        files += [os.path.join(folder, n) for n in names if not n.startswith(".")]
elif os.path.isfile(source):
    files = [source]
if not files:
    level = env["IN_IF_NO_FILES_FOUND"]
    if level == "error":
        print(f"::error::No files were found with the provided path: {source}. No artifacts will be uploaded.")
        sys.exit(1)
    if level == "warn":
        print(f"::warning::No files were found with the provided path: {source}. No artifacts will be uploaded.")
    sys.exit(0)
run = env.get("GITHUB_RUN_ID", "0")
os.makedirs(env["FLEETFLOW_TEST_ARTIFACTS"], exist_ok=True)
upload = tempfile.mkdtemp(prefix=f"run{run}-", dir=env["FLEETFLOW_TEST_ARTIFACTS"])  # act reuses run ids
dest = os.path.join(upload, env["IN_NAME"])
digest = hashlib.sha256()
for path in sorted(files):
    target = os.path.join(dest, os.path.relpath(path, source) if os.path.isdir(source) else os.path.basename(path))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(path, target)
    with open(path, "rb") as handle:
        digest.update(handle.read())
artifact_id = zlib.crc32(dest.encode()) % 1000000 + 1
url = f"{env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}/actions/runs/{run}/artifacts/{artifact_id}"
with open(env["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
    out.write(f"artifact-id={artifact_id}\\nartifact-url={url}\\nartifact-digest={digest.hexdigest()}\\n")
"""


def write_upload_artifact_standin(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "action.yml").write_text(STANDIN, encoding="utf-8")
    (dest / "upload.py").write_text(UPLOAD, encoding="utf-8")
    return dest


DOWNLOAD_ARTIFACT_ACTION = "actions/download-artifact"

DOWNLOAD_STANDIN = """\
# Test stand-in for actions/download-artifact (tests/artifactkit.py): copies what the upload stand-in stored.
name: download-artifact (stand-in)
description: test stand-in
inputs:
  name: {required: false, default: ""}
  artifact-ids: {required: false, default: ""}
  path: {required: false, default: ""}
  pattern: {required: false, default: ""}
  merge-multiple: {required: false, default: "false"}
  github-token: {required: false, default: ""}
  repository: {required: false, default: ""}
  run-id: {required: false, default: ""}
  skip-decompress: {required: false, default: "false"}
  digest-mismatch: {required: false, default: "error"}
outputs:
  download-path: {value: "${{ steps.download.outputs.download-path }}"}
runs:
  using: composite
  steps:
    - id: download
      shell: bash
      env:
        IN_NAME: ${{ inputs.name }}
        IN_PATH: ${{ inputs.path }}
        IN_PATTERN: ${{ inputs.pattern }}
        IN_MERGE_MULTIPLE: ${{ inputs.merge-multiple }}
      run: python3 "$GITHUB_ACTION_PATH/download.py"
"""

DOWNLOAD = """\
import fnmatch, os, shutil, sys

env = os.environ
store = env["FLEETFLOW_TEST_ARTIFACTS"]
run = env.get("GITHUB_RUN_ID", "0")
dest = os.path.join(env["GITHUB_WORKSPACE"], env["IN_PATH"]) if env["IN_PATH"] else env["GITHUB_WORKSPACE"]
found = {}
for upload in sorted(os.listdir(store)) if os.path.isdir(store) else []:
    if not upload.startswith(f"run{run}-"):
        continue
    for name in os.listdir(os.path.join(store, upload)):
        wanted = name == env["IN_NAME"] if env["IN_NAME"] else fnmatch.fnmatchcase(name, env["IN_PATTERN"] or "*")
        if wanted:
            found[name] = os.path.join(store, upload, name)  # the newest upload of a name (overwrite: true)
if env["IN_NAME"] and not found:
    print(f"::error::Unable to download artifact(s): Artifact not found for name: {env['IN_NAME']}")
    sys.exit(1)
for name, source in sorted(found.items()):
    one = env["IN_NAME"] or env["IN_MERGE_MULTIPLE"] == "true"
    shutil.copytree(source, dest if one else os.path.join(dest, name), dirs_exist_ok=True)
print(f"Total of {len(found)} artifact(s) downloaded")
with open(env["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
    out.write(f"download-path={dest}\\n")
"""


def write_download_artifact_standin(dest: Path) -> Path:
    """actions/download-artifact v8.0.1 (3e5f45b2): inputs ``name``, ``pattern``, ``path``, ``merge-multiple`` ...
    (its ``action.yml``); without ``name`` every artifact of the run matching ``pattern`` is downloaded, each into
    ``path/<name>/`` unless ``merge-multiple`` (its README, "Download multiple (filtered) Artifacts")."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "action.yml").write_text(DOWNLOAD_STANDIN, encoding="utf-8")
    (dest / "download.py").write_text(DOWNLOAD, encoding="utf-8")
    return dest
