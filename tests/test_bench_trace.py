"""How ``benchmarks/bench_promotion.py`` splits a push between fleetflow's side and the forge's, on real pushes.

The benchmark reports the schedule "without the push's server side" as fleetflow's own part. It reads the server
side off git's trace2 event stream (git's ``Documentation/technical/api-trace2.adoc``: every process writes
``cmd_name`` and ``exit`` events; ``exit`` carries ``t_abs``, the seconds since the process started, and ``time``, the
UTC time of the event; a child's ``sid`` is its parent's, a slash, and its own). A local push runs ``receive-pack``
for the whole push: it waits while the sending ``pack-objects`` packs, so its ``t_abs`` also holds the sender's
work. The server side counted is from the ``pack-objects`` exit to the ``receive-pack`` exit.
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fleet import git

ROOT = Path(__file__).resolve().parent.parent


def _repos(tmp_path: Path) -> tuple[Path, Path]:
    """A work tree with one commit on ``main``, and a bare clone of it that receives the pushes."""
    work, receiver = tmp_path / "work", tmp_path / "receiver.git"
    work.mkdir()
    git(work, "init", "-q")
    (work / "a.txt").write_text("a\n", encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "one")
    git(tmp_path, "clone", "-q", "--bare", str(work), str(receiver))
    return work, receiver


def _traced_push(work: Path, receiver: Path, refspec: str, trace: Path) -> list[dict[str, Any]]:
    """Push ``refspec`` with trace2's event target on; the events (a copy: the benchmark deletes its file)."""
    trace.parent.mkdir(parents=True)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GIT_TRACE2_EVENT", str(trace))
        git(work, "push", "-q", str(receiver), refspec)
    shutil.copy(trace, trace.parent.parent / f"{trace.parent.name}.json")
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines() if line.strip()]


def _split(trace: Path) -> tuple[float, float]:
    """The benchmark's own function, run as the benchmark runs it (its folder first on the path)."""
    code = ("import json, sys; from pathlib import Path; sys.path.insert(0, 'benchmarks'); import bench_promotion; "
            f"print(json.dumps(bench_promotion.receive_pack_seconds(Path({str(trace)!r}))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    server, check = json.loads(out)
    return float(server), float(check)


def _exit(events: list[dict[str, Any]], name: str) -> dict[str, Any]:
    sids = [e["sid"] for e in events if e.get("event") == "cmd_name" and e.get("name") == name]
    assert len(sids) == 1, (name, sids)
    return next(e for e in events if e.get("event") == "exit" and e["sid"] == sids[0])


def _time(event: dict[str, Any]) -> float:
    return datetime.datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp()


def test_the_server_side_of_a_push_starts_when_the_senders_pack_is_sent(tmp_path: Path) -> None:
    """A push of a commit with 2,000 new files: the server side is ``receive-pack``'s exit minus the sending
    ``pack-objects``' exit, less than ``receive-pack``'s whole run (which holds the wait for the pack), and its
    connectivity check is the ``rev-list`` that ``receive-pack`` started."""
    work, receiver = _repos(tmp_path)
    for i in range(2000):
        folder = work / f"d{i % 40}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.yaml").write_text(f"value: {i * 7919}\n" * 20, encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "two")
    trace = tmp_path / "push" / "events.json"
    events = _traced_push(work, receiver, "HEAD:refs/heads/main", trace)

    server, check = _split(trace)

    receiving, sending = _exit(events, "receive-pack"), _exit(events, "pack-objects")
    checking = _exit(events, "rev-list")
    assert sending["sid"].rpartition("/")[0] == receiving["sid"].rpartition("/")[0]  # both children of the push
    assert abs(server - (_time(receiving) - _time(sending))) < 1e-6
    assert 0 < server < receiving["t_abs"]
    assert check == checking["t_abs"]
    assert check <= server
    assert not trace.parent.exists()  # the benchmark removes its trace folder


def test_a_push_that_only_deletes_counts_receive_pack_whole(tmp_path: Path) -> None:
    """Deleting a branch sends no pack: no ``pack-objects`` runs, and the server side is ``receive-pack``'s whole
    run."""
    work, receiver = _repos(tmp_path)
    git(receiver, "branch", "gone", "main")
    trace = tmp_path / "push" / "events.json"
    events = _traced_push(work, receiver, ":refs/heads/gone", trace)
    assert not [e for e in events if e.get("event") == "cmd_name" and e.get("name") == "pack-objects"]

    server, check = _split(trace)

    assert server == _exit(events, "receive-pack")["t_abs"]
    assert check == 0
