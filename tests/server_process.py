"""Runs `contextwm serve` as a child process, for tests where a crash or a signal is the point."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path


class ServerProcess:
    """A server subprocess; `port` is known once it prints its listening line."""

    def __init__(self, data_dir: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.output: list[str] = []
        self._ready = threading.Event()
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
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(120):
            self.kill()
            raise RuntimeError("server did not start:\n" + "".join(self.output[-40:]))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            m = re.search(r"contextwm listening on port (\d+)", line)
            if m:
                self.port = int(m.group(1))
                self._ready.set()
        self._ready.set()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

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
