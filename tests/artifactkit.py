"""A local stand-in for ``actions/upload-artifact`` under act (mapped with ``--local-repository`` at the pinned sha,
as ``tests/actkit.py`` does for actions/checkout and actions/create-github-app-token).

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
