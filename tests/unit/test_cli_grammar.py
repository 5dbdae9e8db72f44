"""The command line's grammar as a whole: the global options after any client command, the data
directory of the offline commands named as `serve` and `keys` name it, a help text for every
option, counts in the right number, and a word when a listing is empty."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from contextwm.cli import main, render
from contextwm.cli import parser as cli_parser
from contextwm.cli.conversations import items
from contextwm.serve import add_serve_arguments


def build() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser with serve's flags in, as the entry point fills them when serve runs."""
    parser, server_flags = cli_parser.build_parser(cli_parser.DEFAULT_TARGET, {})
    for sub in server_flags.values():
        add_serve_arguments(sub)
    return parser, server_flags


def commands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (sub)command's parser, named by its words ("keys create")."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, nested in commands(sub):
                    yield f"{name} {inner}", nested


def client_commands() -> list[tuple[str, argparse.ArgumentParser]]:
    parser, _ = build()
    return [(n, s) for n, s in commands(parser) if s.get_default("handler") is not None]


def least_arguments(sub: argparse.ArgumentParser) -> list[str]:
    """The fewest arguments the command parses with: each positional and required option."""
    argv: list[str] = []
    for action in sub._actions:
        if action.option_strings and not action.required:
            continue
        if not action.option_strings and action.nargs in ("?", "*"):
            continue
        value = str(action.choices[0]) if action.choices else "1"  # type: ignore[index]
        argv += [action.option_strings[0], value] if action.option_strings else [value]
    return argv


def test_every_client_command_takes_the_global_options_after_it_too() -> None:
    parser, _ = build()
    found = client_commands()
    assert {"import", "append", "search", "stats", "mcp", "retention"} <= {n for n, _ in found}
    for name, sub in found:
        argv = [name, *least_arguments(sub)]
        after = ["--target", "unix:/after.sock", "--namespace", "team-b", "--wait", "5"]
        args = parser.parse_args([*argv, *after])
        assert (args.target, args.namespace, args.wait) == ("unix:/after.sock", "team-b", 5.0)
        # Given before only, they stay; given nowhere, the defaults.
        before = parser.parse_args(["--target", "h:1", "--namespace", "a", *argv])
        assert (before.target, before.namespace) == ("h:1", "a"), name
        plain = parser.parse_args(argv)
        assert plain.target == cli_parser.DEFAULT_TARGET and plain.namespace is None, name
        assert plain.wait == cli_parser.DEFAULT_WAIT_SECONDS, name


def test_import_takes_target_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    # Nothing listens on port 1: the command gets as far as its first call.
    status = main(["import", "--wait", "0", "--target", "127.0.0.1:1", "missing.jsonl"])
    err = capsys.readouterr().err
    assert "unrecognized arguments" not in err
    assert status in (1, 2), err


@pytest.mark.parametrize("command", ["check", "move"])
def test_the_offline_commands_take_data_dir_as_serve_and_keys_do(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser, _ = build()
    extra = ["--to", "postgresql://u@h/db"] if command == "move" else []
    for argv in (["--data-dir", "/d"], ["/d"], ["/d", "--data-dir", "/d"]):
        args = parser.parse_args([command, *argv, *extra])
        assert cli_parser.data_dir_of(args) == Path("/d")
    with pytest.raises(ValueError, match="--data-dir DIR"):
        cli_parser.data_dir_of(parser.parse_args([command, *extra]))
    with pytest.raises(ValueError, match="two data directories"):
        cli_parser.data_dir_of(parser.parse_args([command, "/d", "--data-dir", "/e", *extra]))
    assert main([command, *extra]) == 2
    assert f"error: contextwm {command}: give the data directory" in capsys.readouterr().err


def test_every_option_says_what_it_does() -> None:
    parser, _ = build()
    missing = [
        f"{name} {action.option_strings[0]}"
        for name, sub in [("contextwm", parser), *commands(parser)]
        for action in sub._actions
        if action.option_strings and not action.help and action.dest != "help"
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("count", "noun", "text"),
    [(0, "item", "0 items"), (1, "conversation", "1 conversation"), (2, "file", "2 files")],
)
def test_counts_take_the_noun_in_the_right_number(count: int, noun: str, text: str) -> None:
    assert render.counted(count, noun) == text
    assert render.counted(1234, noun, grouped=True) == f"1,234 {noun}s"


class NoItems:
    def iter_items(self, conversation: str, *, states: list[str]) -> Iterator[Any]:
        return iter(())


@pytest.mark.parametrize(
    ("states", "said"),
    [
        (["archived"], "no archived items in c"),
        (["window", "archived"], "no window or archived items in c"),
        ([], "no items in c"),
    ],
)
def test_an_empty_listing_says_so_on_stderr(
    states: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = SimpleNamespace(conversation="c", states=states)
    assert items(NoItems(), args) == 0  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert (out, err) == ("", said + "\n")
