"""The command line's entry point: parses, hands `serve`, `config show`, `check`, `move` and
`keys` on, runs a client command, exits."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Sequence

from contextwm_client import Client, ContextWMError, UnavailableError

from contextwm.cli import parser as cli_parser
from contextwm.cli.connection import connection_of


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line.

    Args:
        argv: Arguments without the program name; None reads sys.argv.

    Returns:
        The exit status: 0 on success, 1 when a call fails, 2 for usage errors, 130 on Ctrl-C,
        141 when the output's reader has gone (a pipe to `head`)
        (`check`: 0 healthy, 1 problems found, 2 not checked; `config show`: 2 for settings
        the server would refuse; `keys`: 1 refused, 2 bad input).
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The environment is read here only; everything below gets the value passed in.
    target = os.environ.get(cli_parser.TARGET_ENV, cli_parser.DEFAULT_TARGET)
    parser, server_flags = cli_parser.build_parser(target, os.environ)
    command = cli_parser.command_of(arguments)
    if command in server_flags:
        # Imported only on these paths: the server's settings, and for serve torch and faiss.
        from contextwm.serve import add_serve_arguments

        add_serve_arguments(server_flags[command])
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exc:  # usage errors (2) and --help (0) end here, not in the caller
        return exc.code if isinstance(exc.code, int) else 2
    if args.command == "serve":
        from contextwm.serve import run_serve

        return run_serve(args)
    if args.command == "config":
        from contextwm.config_show import run_config_show

        return run_config_show(args)
    if args.command in ("check", "move"):
        try:
            args.data_dir = cli_parser.data_dir_of(args)
        except ValueError as exc:
            print(f"error: contextwm {args.command}: {exc}", file=sys.stderr)
            return 2
    if args.command == "check":
        # Imported only on this path, as serve is: the check reads SQLite and FAISS files.
        from contextwm.check import run_check

        return run_check(args)
    if args.command == "move":
        from contextwm.move import run_move

        return run_move(args)
    if args.command == "keys":
        # Opens a store itself: no client, no server needed.
        from contextwm.access.cli import run_keys

        return run_keys(args)
    handler: cli_parser.Handler = args.handler
    target = args.target
    namespace = args.namespace or cli_parser.DEFAULT_NAMESPACE
    try:
        credentials = connection_of(args)
        client = Client(
            args.target,
            namespace=namespace,
            ready_timeout=args.wait,
            on_wait=_say,
            api_key=credentials.api_key,
            tls=credentials.tls,
        )
    except (ValueError, OSError) as exc:  # a bad key, or TLS files missing or unreadable
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop: threading.Event | None = getattr(args, "stop", None)
    previous = signal.getsignal(signal.SIGINT)
    if stop is not None:
        # A command that can end cleanly (import) gets the first Ctrl-C as a request to
        # stop, so that it can tell what the server holds; a second one interrupts it.
        def interrupt(signum: int, frame: object) -> None:
            stop.set()
            signal.signal(signal.SIGINT, signal.default_int_handler)

        signal.signal(signal.SIGINT, interrupt)
    try:
        with client:
            target = client.target
            return handler(client, args)
    except UnavailableError as exc:
        print(f"error: {exc.code}: {exc.details}\n{_hint(target)}", file=sys.stderr)
        return 1
    except ContextWMError as exc:
        print(f"error: {exc.code}: {exc.details}", file=sys.stderr)
        return 1
    except ValueError as exc:  # refused by the client before any call (a budget given twice)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader left (`contextwm items c | head`): stop quietly, as Unix tools do. Output
        # goes nowhere from here, or the flush at exit would fail on the closed pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    finally:
        if stop is not None:
            signal.signal(signal.SIGINT, previous)


def _say(message: str) -> None:
    print(f"{message}; --wait sets how long", file=sys.stderr)


def _hint(target: str) -> str:
    """How to get a server at the address tried, or reach another one."""
    # A refused TLS handshake is UNAVAILABLE too, and gRPC says no more than that.
    return (
        f"hint: start a server at {target} with `contextwm serve` (scripts/serve in a"
        f" checkout), or point --target or ${cli_parser.TARGET_ENV} at a running one\n"
        "hint: a server with TLS looks just as absent to a client without --tls-ca, or"
        " without the --tls-cert and --tls-key it asks for"
    )
