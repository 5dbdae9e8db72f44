"""Stub drift: regenerating the stubs from proto/ gives exactly the checked-in files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = ROOT / "client" / "contextwm_client" / "v1"


def files_under(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_generated_stubs_match_checked_in(tmp_path: Path) -> None:
    out = tmp_path / "generated"
    python = ROOT / ".venv" / "bin" / "python"
    result = subprocess.run(
        [
            str(python if python.exists() else sys.executable),
            str(ROOT / "scripts" / "gen_protos"),
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    fresh, current = files_under(out), files_under(CHECKED_IN)
    assert fresh, "gen_protos wrote nothing"
    # The typed stubs of mypy-protobuf are part of the generated code, and checked the same.
    assert {"contextwm_pb2.pyi", "contextwm_pb2_grpc.pyi"} <= set(fresh)
    assert sorted(fresh) == sorted(current), "missing or extra generated files"
    drifted = [name for name in fresh if fresh[name] != current[name]]
    assert drifted == [], f"stale stubs, run scripts/gen_protos: {drifted}"
    # The script reports what it wrote.
    assert set(result.stdout.split()) <= set(fresh)
