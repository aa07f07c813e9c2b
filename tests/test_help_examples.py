"""Every command's ``--help`` teaches with examples, and the examples cannot rot.

An example is a line of the help screen, indented as click prints a ``\\b`` paragraph's lines (four spaces: two of
the help, two of the example), that starts with ``fleetflow ``; a line ending in ``\\`` goes on on the next one,
``#`` starts a comment and a redirection ends the command, as in a shell (``shlex``). Each example is parsed with
the command's own click parser (``Command.make_parser``, what click runs before any option is converted): an option
the command does not have (``NoSuchOption``), a value missing, a word that is no option's value, or a required
option left out fails the test. The examples of the commands that work on local folders (validate, plan, render,
explain, route with ``--environments``) and of the fleet commands with ``--forge local`` are then run as written,
against copies of ``examples/control-plane`` laid out as the examples name them, and against a local fleet
(``tests/fleet.py``).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fleetflow.cli import main
from tests.fleet import build_bare_repos, git

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "control-plane"
NOT_YET: set[str] = set()  # commands whose help may show no example yet (none left since 2026-11-29)
LOCAL = {"validate", "plan", "render", "explain"}
# run in this order on one local fleet
FLEET = ["promote", "schedule", "reconcile", "check-rollout", "status", "metrics", "doctor", "init"]
EXAMPLE_SHA = "3f2a9c1"  # the commit the promote examples name: the local fleet's main commit stands in for it
GLOBAL = {"-q", "--quiet", "-v", "--verbose"}


def help_screen(*command: str) -> str:
    result = CliRunner().invoke(main, [*command, "--help"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def examples(screen: str) -> list[list[str]]:
    """The example command lines of a help screen, as words (``fleetflow`` first)."""
    found: list[list[str]] = []
    lines = iter(screen.splitlines())
    for line in lines:
        if not (line.startswith("    fleetflow ")):
            continue
        while line.endswith("\\"):
            line = line[:-1] + next(lines)
        found.append(shell_words(line))
    return found


def shell_words(line: str) -> list[str]:
    """The words of a command line as a shell splits them, up to a redirection or a pipe (``>> "$FILE"``)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    ends = [i for i, word in enumerate(words) if word and set(word) <= set("<>|&;")]
    return words[:ends[0]] if ends else words


def split_example(words: list[str]) -> tuple[str, click.Command, list[str]]:
    """(command name, command, its arguments) of an example; the options before the command must be main's."""
    assert words[0] == "fleetflow", words
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        assert rest[0] in GLOBAL, f"fleetflow has no option {rest[0]} (example: {shlex.join(words)})"
        rest = rest[1:]
    assert rest and rest[0] in main.commands, f"no command in {shlex.join(words)}"
    return rest[0], main.commands[rest[0]], rest[1:]


def check_against_click(words: list[str]) -> str:
    """Parse an example with its command's click parser: only options it has, each with its value, every required
    one there, no stray word. The command's name."""
    name, command, args = split_example(words)
    ctx = click.Context(command, info_name=name)
    shown = shlex.join(words)
    try:
        opts, stray, _ = command.make_parser(ctx).parse_args(args)
    except click.UsageError as error:
        raise AssertionError(f"{shown}: {error.format_message()}") from None
    assert not stray, f"{shown}: {stray} is no option's value"
    missing = [p.name for p in command.params if p.required and p.name not in opts]
    assert not missing, f"{shown}: leaves out required {missing}"
    return name


def all_commands() -> list[str]:
    return sorted(main.commands)


def test_every_command_is_listed_here() -> None:
    """A new command gets examples too (or is named in NOT_YET on purpose); no group hides subcommands."""
    for name, command in main.commands.items():
        assert not isinstance(command, click.Group), f"{name} is a group: check its subcommands' help too"
    assert set(main.commands) == LOCAL | set(FLEET) | NOT_YET | {"demo", "route"}


@pytest.mark.parametrize("name", all_commands())
def test_every_command_shows_examples_of_itself_that_click_accepts(name: str) -> None:
    screen = help_screen(name)
    found = examples(screen)
    if name not in NOT_YET:
        assert found, f"fleetflow {name} --help shows no example"
    for words in found:
        assert check_against_click(words) == name, f"fleetflow {name} --help shows {shlex.join(words)}"


def test_the_top_level_examples_name_real_commands_and_options() -> None:
    found = examples(help_screen())
    assert [words[1] for words in found] == ["validate", "render", "explain"]
    for words in found:
        check_against_click(words)


def test_the_parser_finds_what_an_example_gets_wrong() -> None:
    """The checks above can fail: a renamed option, a flag given a value, a required option left out."""
    screen = ("  prose fleetflow render --nothing\n"
              "    fleetflow render --main a --env b --environment dev \\\n"
              "        --output o --keep-last-good yes   # comment --not-an-option\n"
              "    fleetflow render --main a --env b --environment dev --outptu o\n"
              "    fleetflow render --main a --env b --environment dev\n")
    found = examples(screen)
    assert len(found) == 3 and found[0][-1] == "yes"
    for words, said in zip(found, ["is no option's value", "No such option '--outptu'", "leaves out required"],
                           strict=True):
        with pytest.raises(AssertionError, match=said):
            check_against_click(words)


# --- the examples run ------------------------------------------------------------------------------------------
@pytest.fixture
def checkouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folders the examples name, in the current folder: examples/control-plane (fleetflow's source, for the
    top-level help), cp-main (a control-plane repo on main, with dev, qa and prod branches), cp-dev (a worktree
    of it on dev: ``git worktree add ../cp-dev dev``) and gitops-dev (a GitOps repo checked out on dev)."""
    shutil.copytree(EXAMPLE, tmp_path / "examples" / "control-plane")
    repo = tmp_path / "cp-main"
    shutil.copytree(EXAMPLE / "main", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    for env in ("dev", "qa", "prod"):
        git(repo, "switch", "-q", "--orphan", env)
        shutil.copytree(EXAMPLE / "envs" / env, repo, dirs_exist_ok=True)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", env)
        git(repo, "rm", "-rq", ".")
    git(repo, "switch", "-q", "main")
    git(repo, "worktree", "add", "-q", "../cp-dev", "dev")
    git(tmp_path, "init", "-q", "-b", "dev", "gitops-dev")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(words: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, words[1:], catch_exceptions=False)
    return result.exit_code, result.output


def test_the_local_examples_run_on_the_example_control_plane(checkouts: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    ran = []
    for words in [*examples(help_screen()), *(w for name in sorted(LOCAL) for w in examples(help_screen(name)))]:
        # validate --into reads the change from the checkout it runs in (--repo, default .)
        monkeypatch.chdir(checkouts / "cp-main" if "--into" in words else checkouts)
        code, output = run(words)
        assert code == 0, f"{shlex.join(words)}: exit {code}\n{output}"
        ran.append(words[1])
    assert sorted(set(ran)) == sorted(LOCAL) and len(ran) == 11
    assert (checkouts / "gitops-dev" / ".fleetflow" / "state.json").is_file()  # render wrote where it says
    assert (checkouts / "out" / "dev" / ".fleetflow" / "state.json").is_file()


def test_the_route_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "event.json").write_text(json.dumps({"ref": "refs/heads/main", "after": "a" * 40}))
    local = [w for w in examples(help_screen("route")) if "--environments" in w]
    assert local
    for words in local:
        code, output = run(words)
        assert code == 0 and output.startswith("promote  " + "a" * 40), output


def test_the_fleet_examples_run_on_a_local_fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fleet command's example with ``--forge local --control-plane control-plane.git``, run where the
    control-plane and GitOps repos are, in the order a fleet moves: promote, schedule, reconcile, then the ones
    that read. doctor finds problems in this fleet (no caller workflows: exit 1, each with its fix); every other
    example exits 0."""
    cp, _ = build_bare_repos(tmp_path, str(tmp_path / "gitops.git"), str(tmp_path / "control-plane.git"))
    monkeypatch.setenv("FLEETFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    sha = git(tmp_path, "--git-dir", str(cp), "rev-parse", "main")
    for name in FLEET:
        local = [w for w in examples(help_screen(name)) if "--forge" in w and "local" in w]
        assert local, f"fleetflow {name} --help shows no --forge local example"
        for words in local:
            words = [sha if word == EXAMPLE_SHA else word for word in words]
            code, output = run(words)
            assert code == (1 if name == "doctor" else 0), f"{shlex.join(words)}: exit {code}\n{output}"
            if name == "doctor":
                assert "problem(s):" in output and "Traceback" not in output, output
