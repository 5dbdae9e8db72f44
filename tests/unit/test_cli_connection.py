"""The command line's --api-key and --tls-* options: before or after any client command
(mcp too), their defaults from CONTEXTWM_API_KEY and CONTEXTWM_TLS_*, and the key reaching a
real gRPC server; `contextwm serve` takes its own TLS flags and ignores the client's
variables."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from contextwm.cli import main
from contextwm.cli import parser as cli_parser
from contextwm.cli.connection import VARIABLES, Connection, connection_of
from contextwm.serve import add_serve_arguments, flag_settings
from contextwm.settings import CLIENT_VARIABLES, load_settings
from contextwm_client import Tls
from recording_server import Recorder, recording_server


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    parser, _ = cli_parser.build_parser(cli_parser.DEFAULT_TARGET, environ or {})
    return parser.parse_args(argv)


def connection(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> Connection:
    return connection_of(parse(argv, environ))


def test_without_options_or_variables_the_client_is_plain() -> None:
    assert connection(["get", "c"]) == Connection(api_key=None, tls=None)


def test_the_options_go_before_or_after_any_client_command() -> None:
    want = Connection("k1", Tls(ca_file="ca.pem", cert_file="c.pem", key_file="c.key"))
    options = ["--api-key", "k1", "--tls-ca", "ca.pem", "--tls-cert", "c.pem", "--tls-key", "c.key"]
    assert connection([*options, "get", "c"]) == want
    assert connection(["get", "c", *options]) == want
    assert connection(["search", "q", *options]) == want
    assert connection(["mcp", "--conversation", "c", *options]) == want
    # After the command, a value given before it stays unless given again.
    assert connection(["--api-key", "k1", "stats", "--api-key", "k2"]).api_key == "k2"
    assert connection(["--api-key", "k1", "stats"]).api_key == "k1"


def test_the_variables_give_the_defaults_and_the_options_win() -> None:
    environ = {
        "CONTEXTWM_API_KEY": "from-env",
        "CONTEXTWM_TLS_CA": "env-ca.pem",
        "CONTEXTWM_TLS_CERT": "env.pem",
        "CONTEXTWM_TLS_KEY": "env.key",
    }
    assert connection(["get", "c"], environ) == Connection(
        "from-env", Tls(ca_file="env-ca.pem", cert_file="env.pem", key_file="env.key")
    )
    assert connection(["get", "c", "--api-key", "flag"], environ).api_key == "flag"
    assert connection(["--tls-ca", "flag-ca.pem", "get", "c"], environ).tls == Tls(
        ca_file="flag-ca.pem", cert_file="env.pem", key_file="env.key"
    )
    # An empty variable is unset, as shells write it to clear one for one command.
    assert connection(["get", "c"], {"CONTEXTWM_API_KEY": "", "CONTEXTWM_TLS_CA": ""}) == (
        Connection(None, None)
    )


def test_any_tls_option_turns_tls_on() -> None:
    assert connection(["--tls-ca", "ca.pem", "get", "c"]).tls == Tls(ca_file="ca.pem")
    # A client certificate alone: the server is checked against the system's roots.
    assert connection(["--tls-cert", "c.pem", "--tls-key", "c.key", "get", "c"]).tls == Tls(
        cert_file="c.pem", key_file="c.key"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-key", "c.key"], "--tls-cert and --tls-key go together"),
        (["--tls-ca", ""], "--tls-ca is empty: give a PEM file"),
    ],
)
def test_half_given_tls_is_a_usage_error(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        connection([*argv, "get", "c"])


def test_command_of_skips_the_options_values() -> None:
    argv = ["--api-key", "k", "--tls-ca", "get", "--tls-cert", "x", "--tls-key", "y", "list"]
    assert cli_parser.command_of(argv) == "list"


@pytest.fixture
def recorded() -> Iterator[tuple[str, Recorder]]:
    with recording_server() as server:
        yield server


def bearers(recorder: Recorder) -> list[str | None]:
    return [c.metadata.get("authorization") for c in recorder.context_calls()]


def test_the_cli_sends_the_api_key_of_the_flag_or_the_variable(
    recorded: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    target, recorder = recorded
    monkeypatch.delenv("CONTEXTWM_API_KEY", raising=False)
    # Exit 1: the server implements nothing; what matters is what it received.
    assert main(["--target", target, "--api-key", "from-flag", "get", "c"]) == 1
    assert main(["--target", target, "get", "c", "--api-key", "after"]) == 1
    monkeypatch.setenv("CONTEXTWM_API_KEY", "from-env")
    assert main(["--target", target, "get", "c"]) == 1
    assert main(["--target", target, "list", "--api-key", "flag-wins"]) == 1
    assert bearers(recorder) == [
        "Bearer from-flag",
        "Bearer after",
        "Bearer from-env",
        "Bearer flag-wins",
    ]


def test_bad_keys_and_missing_tls_files_are_usage_errors(
    recorded: tuple[str, Recorder], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, recorder = recorded
    assert main(["--target", target, "--api-key", "two words", "get", "c"]) == 2
    assert "error: api_key must be a non-empty string" in capsys.readouterr().err
    missing = tmp_path / "ca.pem"
    assert main(["--target", target, "--tls-ca", str(missing), "get", "c"]) == 2
    assert f"error: [Errno 2] No such file or directory: '{missing}'" in capsys.readouterr().err
    assert main(["--target", target, "--tls-cert", str(missing), "get", "c"]) == 2
    assert "error: --tls-cert and --tls-key go together" in capsys.readouterr().err
    assert recorder.context_calls() == []


def test_serve_ignores_the_client_variables() -> None:
    # A shell set up for client commands can start a server too.
    assert set(VARIABLES) | {cli_parser.TARGET_ENV} <= CLIENT_VARIABLES
    environ = {name: "x" for name in CLIENT_VARIABLES}
    assert load_settings(environ=environ) == load_settings()


def test_serve_flags_set_the_tls_and_exposure_settings() -> None:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    args = parser.parse_args(
        [
            "--tls-cert",
            "s.pem",
            "--tls-key",
            "s.key",
            "--tls-client-ca",
            "ca.pem",
            "--require-api-keys",
            "--insecure",
        ]
    )
    settings = load_settings(overrides=flag_settings(args))
    assert (settings.tls_cert_file, settings.tls_key_file, settings.tls_client_ca_file) == (
        "s.pem",
        "s.key",
        "ca.pem",
    )
    assert settings.require_api_keys and settings.insecure
    # Not given, the switches leave the file's and the environment's values alone.
    environ = {"CONTEXTWM_REQUIRE_API_KEYS": "true", "CONTEXTWM_INSECURE": "1"}
    unset = flag_settings(parser.parse_args([]))
    assert unset["require_api_keys"] is None and unset["insecure"] is None
    settings = load_settings(environ=environ, overrides=unset)
    assert settings.require_api_keys and settings.insecure
