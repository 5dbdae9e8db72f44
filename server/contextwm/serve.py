"""`contextwm serve`: flags, signal handling and the wait for shutdown (the entry point)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from contextwm.own_session import enter_own_session
from contextwm.settings import EMBEDDERS, SettingsError, load_settings

# The exit status when the data directory cannot be served (damaged store, another server
# on it): distinct, so that a supervisor can be told not to restart into the same refusal
# (systemd: RestartPreventExitStatus=3).
REFUSED = 3


# The settings the flags set, by flag; the rest come from the config file and the environment.
FLAGS = {
    "host": "--host",
    "port": "--port",
    "socket": "--socket",
    "data_dir": "--data-dir",
    "store": "--store",
    "log_level": "--log-level",
    "embedder": "--embedder",
    "workspace_root": "--workspace",
    "metrics_host": "--metrics-host",
    "metrics_port": "--metrics-port",
    "inspector_host": "--inspector-host",
    "inspector_port": "--inspector",
    "tls_cert_file": "--tls-cert",
    "tls_key_file": "--tls-key",
    "tls_client_ca_file": "--tls-client-ca",
    "require_api_keys": "--require-api-keys",
    "insecure": "--insecure",
    "own_session": "--own-session",
}


def flag_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the flags give, None for a flag not given (argparse stores --data-dir as
    data_dir)."""
    return {setting: getattr(args, flag[2:].replace("-", "_")) for setting, flag in FLAGS.items()}


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `contextwm serve`; each overrides the config file and environment."""
    parser.add_argument("--config", type=Path, help="TOML settings file")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on; 0 picks one (default 50051)")
    parser.add_argument("--socket", help="listen on this Unix socket instead of a port")
    parser.add_argument("--data-dir", type=Path, help="where the SQLite file and indexes live")
    parser.add_argument(
        "--store",
        help="a PostgreSQL URL (postgresql://user:password@host:port/db) to keep conversations"
        " in, shared by replicas (default: the SQLite file in the data directory)",
    )
    parser.add_argument(
        "--workspace",
        help="the agent's files: the workspace of conversations that name none",
    )
    parser.add_argument(
        "--log-level", choices=["debug", "info", "warning", "error"], help="(default info)"
    )
    parser.add_argument(
        "--embedder",
        choices=EMBEDDERS,
        help="minilm (default; ONNX Runtime), minilm-int8 (quantised: faster, its own vectors), "
        "minilm-torch (PyTorch) or hashing (tests only)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics at http://HOST:PORT/metrics; 0 picks a port (default off)",
    )
    parser.add_argument("--metrics-host", help="address of the metrics port (default 127.0.0.1)")
    parser.add_argument(
        "--inspector",
        type=int,
        metavar="PORT",
        help="serve the read-only web inspector at http://HOST:PORT/; 0 picks a port (default off)",
    )
    parser.add_argument("--inspector-host", help="address of the inspector (default 127.0.0.1)")
    parser.add_argument(
        "--tls-cert", metavar="PEM", help="serve TLS with this certificate chain (with --tls-key)"
    )
    parser.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    parser.add_argument(
        "--tls-client-ca",
        metavar="PEM",
        help="mutual TLS: clients must present a certificate this CA signed",
    )
    parser.add_argument(
        "--own-session",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve from a child leading a session of its own, so that busy processes of"
        " the starter's session cannot crowd it out (Linux; on by default; see"
        " docs/sidecar.md)",
    )
    # store_true with None for "not given": a flag only ever turns these on, over the file
    # and the environment.
    parser.add_argument(
        "--require-api-keys",
        action="store_true",
        default=None,
        help="every call must carry an API key (authorization: Bearer ...)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="listen on a non-loopback --host without API keys and TLS: only on a network"
        " you trust",
    )


def run_serve(args: argparse.Namespace) -> int:
    """Serves until SIGTERM or SIGINT, then drains in-flight calls and exits 0; exits
    REFUSED without listening when the data directory must not be served, and 2 with one
    line for settings it cannot use (TLS files, an address it must not listen on).

    The port is bound before the model loads: health probes answer at once (liveness
    SERVING, readiness NOT_SERVING), and ContextService calls get UNAVAILABLE until ready."""
    try:
        settings = load_settings(args.config, os.environ, flag_settings(args))
    except SettingsError as exc:
        print(f"error: {exc}", flush=True)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    if settings.own_session and (ended := enter_own_session()) is not None:
        return ended  # the parent, once the server in its own session has ended
    from contextwm.adapters.main_thread import MainThread
    from contextwm.adapters.postgres.database import StoreUnavailable
    from contextwm.adapters.sqlite.guard import UnusableStore
    from contextwm.app import Service
    from contextwm.datadir.lock import DataDirInUse

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        listening = Service.listen(settings)
    except SettingsError as exc:  # TLS files, or an address not to listen on: as above
        print(f"error: {exc}", flush=True)
        return 2
    except (UnusableStore, DataDirInUse) as exc:
        # The message is the whole story, for a person: no traceback.
        print(f"contextwm: not starting: {exc}", file=sys.stderr, flush=True)
        return REFUSED
    except (StoreUnavailable, OSError) as exc:
        # Worth retrying (the database may be starting, a port be freed): not REFUSED.
        print(f"contextwm: not starting: {exc}", file=sys.stderr, flush=True)
        return 1
    # Tests and supervisors read this line to learn the bound port. Calls are refused
    # UNAVAILABLE until the second line: the model takes seconds to load.
    where = f"unix:{settings.socket}" if settings.socket else f"port {listening.port}"
    # (The port's form is what scripts parse: "contextwm listening on port N".)
    print(
        f"contextwm listening on {where}; loading the model (calls get UNAVAILABLE until ready)",
        flush=True,
    )
    main_thread = MainThread()
    service = listening.load(main_thread=main_thread)
    # Printed once the health service reports contextwm.v1.ContextService SERVING.
    print(f"contextwm ready on {where}", flush=True)
    # Until SIGTERM, the main thread embeds queries (it does so fastest); it wakes up now and
    # then, since Python runs a signal handler only on the main thread, back in bytecode.
    main_thread.serve(stop)
    logging.getLogger(__name__).info("shutting down: draining calls in flight")
    service.stop()
    return 0
