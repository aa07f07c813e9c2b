"""The event-loop scenarios of tests/test_event_loop.py under act, against the OLD design and against today's, with
the same seeds: which scenarios the old design fails, and how (issue #8, item 6: "the old design fails at least one
of these"). The results are in docs/design.md (§7, "Why level-triggered").

Run from the repository root (needs act, which the test extras install as ``.venv/bin/act``, and the git history
that holds the old commit; a fresh ``git clone`` has it)::

    python benchmarks/old_design_under_act.py                      # every scenario, both designs, two at a time
    python benchmarks/old_design_under_act.py --design old --scenario faults-1 --verbose
    python benchmarks/old_design_under_act.py --markdown           # the table only

The old design is commit ``da8feae`` (``--old``): main before the work on #7-#10, whose callers run ``route`` and
then ``promote`` / ``schedule`` / ``check-rollout``. Its callers, reusable workflows and actions come from that commit
(``git archive``); its fleetflow is installed by its own ``actions/_shared/install.py`` from its own hash-pinned
requirements into its own venv (``--venvs``, kept between runs; the first install takes about a minute). Today's
design is this checkout. Both are delivered by the same event loop with GitHub's rules (the workflow file of the
pushed commit / default branch / merge commit, ``on:`` filters, concurrency, no event for ``GITHUB_TOKEN`` writes),
every delivery an act run. tests/olddesign.py says what the harness adapts to the old design (never the old code).

Scenarios (``N``: the seed of the faults: 30% of deliveries dropped, 20% duplicated, the rest reordered):

- ``chain``: a push to main, no faults: dev, qa and prod-eu must record success (one PR, pin and record each);
- ``faults-N``: the same with faulty deliveries: the same end state;
- ``qa-fails-N``: cluster qa-2 fails: qa must record failure and prod-eu never be pinned;
- ``env-branch-dev`` / ``env-branch-qa``: after the chain, a person changes that environment's branch: within three
  cron ticks its GitOps branch or PR must carry the change;
- ``automerge``: dev has ``autoMerge``, its GitOps branch requires ``ci/check``, which a CI posts on every fleetflow
  PR head; nobody merges dev's PR: the chain must roll out; ``automerge-ci-dropped``: the same, the first delivery
  of that CI status dropped (nothing else).

Each line says pass/FAIL, what the state was at the end (pins, ``fleetflow/<env>`` records, PRs) and the act runs
per event; ``--verbose`` lists every act run with its jobs. Two act runs at a time by default (``--jobs``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import actkit
from tests.olddesign import OLD, SCENARIOS, Outcome, new_design, old_design, run_one


# --- the report ----------------------------------------------------------------------------------------------------
def table(outcomes: list[Outcome], old: str) -> str:
    by = {(o.scenario, o.design): o for o in outcomes}
    scenarios = [s for s in SCENARIOS if any(k[0] == s for k in by)]
    lines = [f"| scenario | old design ({old}) | today's design |", "|---|---|---|"]
    for scenario in scenarios:
        cells = []
        for design in ("old", "new"):
            o = by.get((scenario, design))
            if o is None:
                cells.append("not run")
                continue
            runs = sum(o.runs.values())
            verdict = "passes" if o.passed else "**fails**"
            cells.append(f"{verdict}: {o.how} ({runs} act runs)" + (f"; error: {o.error}" if o.error else ""))
        lines.append(f"| {scenario} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", default=OLD, help="the old design's commit (default: %(default)s)")
    parser.add_argument("--design", choices=["old", "new", "both"], default="both")
    parser.add_argument("--scenario", action="append", choices=SCENARIOS,
                        help="a scenario to run (repeatable; default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="scenarios side by side (default: %(default)s)")
    parser.add_argument("--venvs", type=Path, default=Path.home() / ".cache" / "fleetflow-old-design",
                        help="where the designs' venvs are kept between runs (default: %(default)s)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (act logs, repositories)")
    parser.add_argument("--verbose", action="store_true", help="list every act run: the delivery, its jobs")
    parser.add_argument("--markdown", action="store_true", help="print only the table")
    args = parser.parse_args(argv)
    if not actkit.act_available():
        parser.error(f"act is missing ({actkit.ACT}): pip install -e '.[test]'")
    work = Path(tempfile.mkdtemp(prefix="old-design-"))
    designs = []
    if args.design in ("old", "both"):
        designs.append(old_design(args.old, work, args.venvs))
    if args.design in ("new", "both"):
        designs.append(new_design(work, args.venvs))
    scenarios = args.scenario or SCENARIOS
    cases = [(d, s) for s in scenarios for d in designs]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, d, s, work / f"{d.name}-{s}") for d, s in cases]
        outcomes = []
        for future in futures:
            outcome = future.result()
            outcomes.append(outcome)
            if not args.markdown:
                print(f"{outcome.design:3} {outcome.scenario:11} {'pass' if outcome.passed else 'FAIL'}  "
                      f"{outcome.how}  runs {dict(outcome.runs)}  {outcome.seconds:.0f} s"
                      + (f"\n    failed jobs: {outcome.failed_jobs}" if outcome.failed_jobs else "")
                      + (f"\n    error: {outcome.error}" if outcome.error else "")
                      + "".join(f"\n    {line}" for line in outcome.log if args.verbose), flush=True)
    print(table(outcomes, args.old))
    if not args.markdown:
        print(f"wall {time.monotonic() - started:.0f} s; work directory {work}"
              + ("" if args.keep else " (removed)"))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
