"""Pushes GitHub refuses, refused by a bare repository the way GitHub refuses them.

GitHub declines a push with words git prints as ``remote:`` lines and a reason on git's ``! [remote rejected]`` line
(``--porcelain``: ``!<TAB><ref><TAB>[remote rejected] (<reason>)``). A ``pre-receive`` hook can print the lines but
its reason is always "pre-receive hook declined"; git's ``proc-receive`` hook (githooks(5), "proc-receive", for the
refs ``receive.procReceiveRefs`` names) reports ``ng <ref> <reason>`` with any reason, and its standard error reaches
the pusher as ``remote:`` lines. :func:`refuse_pushes` installs one that declines every ref with GitHub's words.

The words, as GitHub prints them (public logs quote them):

* :data:`PROTECTED`: branch protection, ``GH006`` and "(protected branch hook declined)" (SalamLang/Salam#430,
  foundry-rs/block-explorers#110, supportpal/github-gh-cli#47).
* :func:`workflows`: a GitHub App's token (a workflow's GITHUB_TOKEN is one) changing ``.github/workflows/``
  without the ``workflows`` permission: no ``remote:`` line, the reason alone (repo-sync/github-sync#23,
  peter-evans/create-pull-request#1234, AndreasAugustin/actions-template-sync#176).
* :func:`large_file`: a file over 100 MB, ``GH001`` and "(pre-receive hook declined)" (GitHub Docs, "About large
  files on GitHub": "GitHub blocks files larger than 100 MiB"; the lines as a push printed them,
  https://pastebin.com/nCzsBxLv).

A ruleset's ``GH013`` is the stand-in's own ``pre-receive`` hook (``Repo.decline_ref_writes``); a token without
``contents: write`` is an HTTP 403 before any hook runs (``tests/githttp.py``'s ``denied``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from .gitbackend import BareRepo


@dataclass(frozen=True)
class Refusal:
    said: str  # what the remote prints (``remote:`` lines)
    reason: str  # the reason on ``! [remote rejected]``


def protected(ref: str) -> Refusal:
    return Refusal(f"error: GH006: Protected branch update failed for {ref}.\n\n"
                   "- Changes must be made through a pull request.\n", "protected branch hook declined")


def workflows(path: str) -> Refusal:
    return Refusal("", f"refusing to allow a GitHub App to create or update workflow `{path}` without `workflows` "
                       "permission")


def large_file(path: str, megabytes: float) -> Refusal:
    return Refusal("error: GH001: Large files detected. You may want to try Git Large File Storage - "
                   "https://git-lfs.github.com.\nerror: Trace: 0c7398362b82557179bd5c5bc2d334da\n"
                   "error: See https://gh.io/lfs for more information.\n"
                   f"error: File {path} is {megabytes:.2f} MB; this exceeds GitHub's file size limit of 100.00 MB\n",
                   "pre-receive hook declined")


_HOOK = '''#!{python}
# ghstub: decline every pushed ref as GitHub does (git's proc-receive protocol, githooks(5))
import sys
SAID = {said!r}
REASON = {reason!r}
inp, out = sys.stdin.buffer, sys.stdout.buffer
def read():
    size = int(inp.read(4), 16)
    return None if size == 0 else inp.read(size - 4).rstrip(b"\\n")
def write(data):
    out.write(b"%04x" % (len(data) + 4) + data)
while read() is not None:  # version and capabilities
    pass
write(b"version=1\\0")
out.write(b"0000")
out.flush()
refs = []
while (line := read()) is not None:
    refs.append(line.split(b" ")[2])
sys.stderr.write(SAID)
sys.stderr.flush()
for ref in refs:
    write(b"ng " + ref + b" " + REASON.encode())
out.write(b"0000")
out.flush()
'''


def refuse_pushes(git_dir: Path, refusal: Refusal) -> None:
    """Make the bare repository at ``git_dir`` decline every push to a branch or tag with ``refusal``'s words."""
    hook = git_dir / "hooks" / "proc-receive"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(_HOOK.format(python=sys.executable, said=refusal.said, reason=refusal.reason))
    hook.chmod(0o755)
    repo = BareRepo(git_dir)
    repo.git("config", "--unset-all", "receive.procReceiveRefs", check=False)
    for refs in ("refs/heads", "refs/tags"):
        repo.git("config", "--add", "receive.procReceiveRefs", refs)


def accept_pushes(git_dir: Path) -> None:
    """Undo :func:`refuse_pushes` (the rule that declined them fixed)."""
    (git_dir / "hooks" / "proc-receive").unlink(missing_ok=True)
    BareRepo(git_dir).git("config", "--unset-all", "receive.procReceiveRefs", check=False)
