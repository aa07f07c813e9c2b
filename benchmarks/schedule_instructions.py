"""Instructions, not seconds: one schedule after the same 1,000-assignment change at two or more fleet sizes,
counted by valgrind's callgrind in every process the schedule runs, so that what grows is read without the noise
of a shared machine and its disk.

Run from the repository root (needs ``valgrind``; about two minutes a size at 100,000 assignments)::

    python benchmarks/schedule_instructions.py                       # 100 workloads x 100 and x 1,000 cluster types
    python benchmarks/schedule_instructions.py --cluster-types 100,300,1000

For each size: the fleet of ``bench_promotion --growth`` (the line tuning covers 10 cluster types, so the change is
1,000 assignments at every size), its full promote and merge, one schedule after the change (merged: the caches
are warm, as on a runner with a cache), then the change again (a new value) and one schedule under ``valgrind
--tool=callgrind --trace-children=yes``, its PR merged after. Valgrind's log of each process names its command,
its parent's pid and the instructions it ran (``Collected``); the processes are sorted by the process tree:

- **fleetflow's process**: the Python that runs the schedule, less the same process run to the point where the
  schedule starts (the interpreter, the imports and the context; counted once per size the same way);
- **the git fleetflow runs**: every other process under it (fetches, ``cat-file``, ``fast-import``, the sending
  side of the push) but the two below;
- **the forge's side**: ``git receive-pack`` and ``git upload-pack`` with every process under them: what the
  receiving repository runs, which on GitHub is GitHub's; **its connectivity check** is the ``rev-list --objects
  --stdin --not --all`` that ``receive-pack`` runs (git's ``connected.c``).

Counts are the same from run to run to within a fraction of a percent (git's to 0.1%, the Python process's to
0.3%; ``PYTHONHASHSEED`` is fixed); seconds on this machine are not (``schedule_steps.py`` and ``bench_promotion.py
--growth`` give those). What instructions do not show: time spent waiting on the disk, and what an instruction
costs: a vectorised ``memset`` or ``strncmp`` counts many for little time (one ``git fast-import`` of 3,000 edits
into a root of 1,000 folders counted 559 million instructions, 263 million of them ``memset``, and takes 0.01 to
0.03 s), so a change that saves instructions is kept only when it saves seconds too. Git runs ``maintenance run
--auto`` or ``gc --auto`` when it decides to; those processes are counted where the tree puts them (the eight
largest git commands on fleetflow's side are listed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_promotion  # a sibling module (benchmarks/ is not a package)
import bench_render

FORGE_COMMANDS = ("receive-pack", "upload-pack")  # the receiving repository's side of a push and of a fetch


@dataclass
class Process:
    """One process as valgrind logged it."""

    pid: int
    parent: int
    command: str
    instructions: int
    children: list[Process] = field(default_factory=list)

    def total(self) -> int:
        return self.instructions + sum(c.total() for c in self.children)

    @property
    def git_command(self) -> str:
        """The git subcommand it ran (``receive-pack``, ``rev-list``...; through ``sh -c`` too, as git starts a
        local ``git-receive-pack``), or its program's name."""
        words = self.command.replace("\\ ", " ").split()
        if not words:
            return "?"
        program = os.path.basename(words[0])
        if program == "sh" and len(words) > 2 and words[1] == "-c":
            return os.path.basename(words[2].strip("'\"\\")).removeprefix("git-")
        if program != "git":
            return program.removeprefix("git-")
        rest = iter(words[1:])
        for word in rest:
            if word in ("-C", "-c", "--git-dir", "--work-tree", "--namespace"):
                next(rest, None)  # the option's value
            elif not word.startswith("-"):
                return word
        return program


_PID = re.compile(r"^==(\d+)== ")


def read_logs(folder: Path) -> list[Process]:
    """Every process of valgrind's logs in ``folder`` (``--log-file=folder/vg.%p``), each with the processes it
    started, as the roots of their trees (a process whose parent is not among them)."""
    found: dict[int, Process] = {}
    for log in sorted(folder.glob("vg.*")):
        pid = parent = instructions = 0
        command = ""
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _PID.match(line)
            if match is None:
                continue
            pid = int(match.group(1))
            text = line[match.end():]
            if text.startswith("Command: "):
                command = text.removeprefix("Command: ")
            elif text.startswith("Parent PID: "):
                parent = int(text.removeprefix("Parent PID: "))
            elif text.startswith("Collected : "):
                instructions = int(text.removeprefix("Collected : ").replace(",", ""))
        if pid:
            found[pid] = Process(pid, parent, command, instructions)
    for process in found.values():
        if process.parent in found:
            found[process.parent].children.append(process)
    return [p for p in found.values() if p.parent not in found]


@dataclass
class Split:
    """A schedule's instructions, by side."""

    fleetflow: int  # fleetflow's Python process, less its start
    start: int  # that start (interpreter, imports, context), counted apart
    git: int  # the git fleetflow runs on its side
    forge: int  # receive-pack and upload-pack with what they run
    checking: int  # receive-pack's connectivity check (rev-list)
    commands: dict[str, int]  # git subcommand -> instructions, on fleetflow's side

    @property
    def own(self) -> int:
        return self.fleetflow + self.git

    @property
    def whole(self) -> int:
        return self.own + self.forge


def split(root: Process, start: int) -> Split:
    """Sort the tree under fleetflow's process ``root`` into the sides of :class:`Split`."""
    git = forge = checking = 0
    commands: dict[str, int] = {}

    def walk(process: Process, forge_side: bool, under_receive: bool) -> None:
        nonlocal git, forge, checking
        name = process.git_command
        forge_side = forge_side or name in FORGE_COMMANDS
        under_receive = under_receive or name == "receive-pack"
        if forge_side:
            forge += process.instructions
            if under_receive and name == "rev-list":
                checking += process.instructions
        else:
            git += process.instructions
            commands[name] = commands.get(name, 0) + process.instructions
        for child in process.children:
            walk(child, forge_side, under_receive)

    for child in root.children:
        walk(child, False, False)
    return Split(root.instructions - start, start, git, forge, checking, commands)


def valgrind(folder: Path, *argv: str, cwd: Path | None = None) -> list[Process]:
    """Run ``argv`` (in ``cwd``) under callgrind, every child traced; the trees of its processes."""
    folder.mkdir(parents=True)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes", f"--log-file={folder}/vg.%p",
                    f"--callgrind-out-file={folder}/cg.%p", *argv], check=True, env=env, cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return read_logs(folder)


def child(root: str, setup_only: bool) -> None:
    """The process valgrind counts: fleetflow's context for the fleet at ``root``, then (unless ``setup_only``) one
    schedule of ``dev``, whose PR number it writes to ``root/pr``."""
    from fleetflow.promotion.schedule import schedule_environment

    bench_promotion.as_the_executable()
    ctx = bench_promotion._context(root)
    if setup_only:
        return
    with ctx:
        outcome = schedule_environment(ctx, bench_promotion.ENV)
    assert outcome.operation == "created", outcome.message
    assert outcome.pull_request is not None
    (Path(root) / "pr").write_text(str(outcome.pull_request.number), encoding="utf-8")


def one_size(work: Path, workloads: int, cluster_types: int) -> Split:
    root = work / f"size-{cluster_types}"
    root.mkdir()
    setup = bench_render.in_child(bench_promotion.warm_growth_fleet, root, workloads, cluster_types)
    me = [sys.executable, str(Path(__file__).resolve()), "--child", str(root)]
    (start,) = valgrind(work / f"start-{cluster_types}", *me, "--setup-only")
    bench_promotion.change_line_tuning(setup)
    (scheduled,) = valgrind(work / f"schedule-{cluster_types}", *me)
    bench_render.in_child(bench_promotion.phase_merge, str(root), int((root / "pr").read_text(encoding="utf-8")))
    shutil.rmtree(root, ignore_errors=True)
    return split(scheduled, start.total())


def report(sizes: list[int], workloads: int, found: list[Split]) -> list[str]:
    """The table: each row's count at each size, in millions, and its ratio to the smallest size's."""
    rows = [
        ("the whole schedule", [s.whole for s in found]),
        ("fleetflow's side", [s.own for s in found]),
        ("  fleetflow's process (less its start)", [s.fleetflow for s in found]),
        ("  the git it runs", [s.git for s in found]),
        *((f"    git {name}", [s.commands.get(name, 0) for s in found])
          for name in sorted({n for s in found for n in s.commands}, key=lambda n: -found[-1].commands.get(n, 0))[:8]),
        ("the forge's side (receive-pack, upload-pack)", [s.forge for s in found]),
        ("  its connectivity check (rev-list)", [s.checking for s in found]),
        ("fleetflow's process start (not counted above)", [s.start for s in found]),
    ]
    header = "".join(f"{workloads * c:>12,}" for c in sizes)
    change = workloads * bench_promotion.GROWTH_CHANGED
    title = f"millions of instructions, one schedule after a {change:,}-assignment change"
    lines = [f"{title:<72}{header}" + "".join(f"{'ratio':>8}" for _ in sizes[1:])]
    for label, values in rows:
        ratios = "".join(f"{v / values[0]:8.2f}" if values[0] else f"{'-':>8}" for v in values[1:])
        lines.append(f"{label:<72}" + "".join(f"{v / 1e6:12,.0f}" for v in values) + ratios)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_promotion.add_growth_sizes(parser)
    parser.add_argument("--json", action="store_true", help="also print the counts as JSON")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--setup-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.setup_only)
        return 0
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian: apt-get install valgrind)")
    sizes = bench_promotion.growth_sizes(parser, args)
    work = Path(tempfile.mkdtemp(prefix="schedule-instructions-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "xdg"))  # the parse cache, fresh
    try:
        found = [one_size(work, args.workloads, c) for c in sizes]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(report(sizes, args.workloads, found)))
    if args.json:
        print(json.dumps([{"assignments": args.workloads * c, "whole": s.whole, "own": s.own,
                           "fleetflow": s.fleetflow, "git": s.git, "forge": s.forge, "checking": s.checking,
                           "start": s.start, "commands": s.commands} for c, s in zip(sizes, found, strict=True)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
