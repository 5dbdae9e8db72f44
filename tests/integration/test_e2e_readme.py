"""Point 14: the README's Python example runs as written against a real server, and the
README's set-up commands are the ones .ci/run and the scripts use."""

from __future__ import annotations

import re
from pathlib import Path

from contextwm.app import Service

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_python_example_runs(service: Service) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", README, flags=re.S)[:1]
    code = example.replace("127.0.0.1:50051", f"127.0.0.1:{service.port}")
    exec(compile(code, "README.md", "exec"), {})


def test_setup_commands_are_the_ones_ci_runs() -> None:
    assert "scripts/serve" in README and "scripts/test" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "exec scripts/test" in ci
    for script in ("setup", "serve", "test"):
        text = (ROOT / "scripts" / script).read_text()
        assert text.startswith("#!/usr/bin/env bash")
        if script != "setup":
            assert "scripts/setup" in text  # each creates or reuses .venv itself
    assert ".venv" in (ROOT / "scripts" / "setup").read_text()
