"""Runs `contextwm serve` as a child process, for tests where a crash or a signal is the point."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from contextwm_client import Client

START_SECONDS = 120.0


def _absolute_path() -> dict[str, str]:
    """PYTHONPATH with its entries made absolute, so that a server started in another
    directory (cwd) imports what this process does."""
    entries = [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
    return {"PYTHONPATH": os.pathsep.join(map(os.path.abspath, entries))} if entries else {}


class ServerProcess:
    """A server subprocess; `port` is known once it prints its listening line (0 on a Unix
    socket), and it is ready (its health service says so) when the constructor returns,
    unless ready=False."""

    def __init__(
        self,
        data_dir: Path,
        *args: str,
        env: dict[str, str] | None = None,
        ready: bool = True,
        cwd: Path | None = None,
        process_group: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.output: list[str] = []
        self.read_at: list[float] = []  # time.monotonic() when each line of output was read
        self._listening = threading.Event()
        self._printed = threading.Event()  # set at each line read
        self.listening = False
        self.port = 0
        command = [
            sys.executable,
            "-m",
            "contextwm",
            "serve",
            "--data-dir",
            str(data_dir),
            *args,
        ]
        if "--socket" not in args and "--port" not in args:
            command += ["--port", "0"]
        self._socket = args[args.index("--socket") + 1] if "--socket" in args else None
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **_absolute_path(), **(env or {})},
            cwd=cwd,
            process_group=process_group,
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self._listening.wait(START_SECONDS):
            self.kill()
            raise RuntimeError("server did not start:\n" + "".join(self.output[-40:]))
        if ready and self.listening:
            self.wait_ready()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.read_at.append(time.monotonic())
            self.output.append(line)
            self._printed.set()
            m = re.search(r"contextwm listening on (?:port (\d+)|unix:)", line)
            if m:
                self.port = int(m.group(1) or 0)
                self.listening = True
                self._listening.set()
        self._listening.set()

    @property
    def target(self) -> str:
        return f"unix:{self._socket}" if self._socket else f"127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = START_SECONDS) -> None:
        """Returns once the health service reports the ContextService SERVING (the model has
        loaded); the listening line comes before that."""
        try:
            with Client(self.target) as client:
                client.wait_ready(timeout)
        except Exception as exc:
            self.kill()
            tail = "".join(self.output[-40:])
            raise RuntimeError(f"server did not get ready ({exc}):\n{tail}") from exc

    def wait_for_line(self, text: str, timeout: float = START_SECONDS) -> bool:
        """Whether a line holding text is printed within timeout seconds (False once the
        output ends without one)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            lines = self.output[seen:]
            if any(text in line for line in lines):
                return True
            seen += len(lines)
            if self.proc.poll() is not None and seen == len(self.output):
                return False
            self._printed.wait(0.5)
            self._printed.clear()
        return False

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a crash."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self, timeout: float = 60) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def log(self) -> str:
        return "".join(self.output)

    def first_read(self, text: str) -> float | None:
        """When the first line holding text was read (after it was printed), if it was."""
        # Not strict: the reader may be between its two appends.
        lines = zip(self.read_at, self.output, strict=False)
        return next((t for t, line in lines if text in line), None)
