"""Gate benchmark: GitHub API requests per gate check while a fleet reports, on the GitHub stand-in.

Run from the repository root::

    python benchmarks/bench_gate.py                  # 1,000 and 30,000 clusters
    python benchmarks/bench_gate.py --clusters 5000

For each fleet size, one GitOps commit (the merge) and the real ``GitHubForge`` (PyGithub, unmodified) against the
stand-in server (tests/ghstub), which counts every request. The clusters' reports are put into the stand-in's
store directly (posting them is not what is measured). Then the gate reads them with
``fleetflow.promotion.reports.read_and_decide``, the reader ``check-rollout`` uses, at each step of a rollout:

- while 0%, 10%, ..., 99.9% of the clusters reported success (pending: the counts decide);
- one cluster failed among the first half (fail fast: the read stops at its page);
- everyone reported, ten of them are still ``pending`` (Argo CD's syncing trigger; nothing failed): the counts
  still decide; with one more context the gate does not expect (a CI status), they cannot, and the read stops at
  the first page with a pending cluster;
- everyone succeeded (the one full read a success needs);

and, for comparison, what reading every page costs (``forge.statuses``: what the gate did before, at every check).
A success is recorded as ``fleetflow/<env>`` on the main commit and not read again: later checks of that
(environment, commit) read only the control-plane commit's statuses (1 request, not measured here).

Targets (issue #9 item 4): ≤ 3 requests per check while pending, ≤ 1 full enumeration per success.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleetflow.forge.github import GitHubForge
from fleetflow.model.resources import RolloutPolicy
from fleetflow.promotion.reports import read_and_decide
from fleetflow.render.incremental import ExpectedCluster
from tests.ghstub.server import GitHubStub
from tests.ghstub.state import CommitStatus, Repo

REPO = "contoso/gitops"


def put(repo: Repo, sha: str, contexts: range, state: str, stub: GitHubStub) -> None:
    now = stub.store.now()
    for i in contexts:
        repo.statuses.append(CommitStatus(stub.store.next_id(), sha, state, f"flux/c{i:06}",
                                          "reconciliation succeeded", None, "flux", now, now))


def measure(clusters: int) -> list[tuple[str, str, int, float, bool]]:
    rows: list[tuple[str, str, int, float, bool]] = []
    with GitHubStub(validate_responses=False) as stub:
        repo = stub.create_repo(REPO)
        sha = repo.commit_files("dev", {"README.md": "x\n"}, "merge")
        forge = GitHubForge(token="t", api_url=stub.url, retries=0, backoff_factor=0, seconds_between_requests=0,
                            seconds_between_writes=0)
        expected = [ExpectedCluster(f"c{i:06}", "ct", f"flux/c{i:06}") for i in range(clusters)]
        policy = RolloutPolicy.model_validate({"timeout": "30m", "soakTime": "0s"})

        def check(label: str) -> None:
            now = datetime.now(UTC) + timedelta(seconds=1)
            mark, started = stub.mark(), time.perf_counter()
            reading = read_and_decide(forge, REPO, [sha], policy, expected, now - timedelta(minutes=5), now)
            elapsed = time.perf_counter() - started
            state = reading.decision.state if not isinstance(reading.decision, list) else "problems"
            rows.append((label, state, stub.count(since=mark), elapsed, reading.enumerated))

        done = 0
        for percent in (0, 10, 50, 90, 99.9):
            upto = int(clusters * percent / 100)
            put(repo, sha, range(done, upto), "success", stub)
            done = upto
            check(f"{percent}% reported")
        failing = clusters // 3
        put(repo, sha, range(failing, failing + 1), "failure", stub)
        check("1 failed (fail fast)")
        put(repo, sha, range(failing, failing + 1), "success", stub)
        put(repo, sha, range(done, clusters - 10), "success", stub)
        put(repo, sha, range(clusters - 10, clusters), "pending", stub)
        check("all in, 10 pending")
        stub.repo(REPO).add_status(sha, "success", "ci/lint", "a context the gate does not expect")
        check("same + 1 other context")
        put(repo, sha, range(clusters - 10, clusters), "success", stub)
        check("all succeeded")
        mark, started = stub.mark(), time.perf_counter()
        forge.statuses(REPO, sha)
        rows.append(("every page (before)", "-", stub.count(since=mark), time.perf_counter() - started, True))
        forge.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, action="append", help="fleet size (repeatable)")
    args = parser.parse_args()
    for clusters in args.clusters or [1000, 30000]:
        print(f"\n{clusters:,} clusters, one GitOps commit")
        print(f"{'check':<24} {'decision':<9} {'requests':>8} {'seconds':>8}  full read")
        for label, state, requests, seconds, enumerated in measure(clusters):
            print(f"{label:<24} {state:<9} {requests:>8} {seconds:>8.2f}  {'yes' if enumerated else 'no'}")


if __name__ == "__main__":
    main()
