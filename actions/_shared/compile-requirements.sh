#!/usr/bin/env bash
# Regenerate actions/requirements.txt: every pin with the sha256 of every file PyPI has for it (all platforms),
# so `pip install --require-hashes` works on any runner. Needs network access to PyPI.
#
#   bash actions/_shared/compile-requirements.sh            # same pins, refreshed hashes
#   bash actions/_shared/compile-requirements.sh --upgrade  # newest versions allowed by requirements.in
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
# Resolved for Python 3.11 on Linux (the oldest Python fleetflow supports; the pins install on newer ones too).
"${PYTHON:-python3.11}" -m venv "$tools/venv"
# Only PyPI: no local pip configuration (extra indexes, find-links, constraints) may leak into the hashes.
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1
unset PIP_FIND_LINKS PIP_EXTRA_INDEX_URL PIP_INDEX_URL PIP_CONSTRAINT
"$tools/venv/bin/pip" install --quiet --index-url https://pypi.org/simple pip-tools
"$tools/venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links --index-url https://pypi.org/simple \
  --output-file requirements.txt "$@" requirements.in
