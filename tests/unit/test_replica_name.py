"""A data directory's replica name: made once, the same after a restart, another directory's
differs."""

from __future__ import annotations

from pathlib import Path

from contextwm.datadir.layout import DataDir
from contextwm.datadir.replica import replica_name


def test_a_directory_keeps_its_replica_name_across_restarts(tmp_path: Path) -> None:
    first = DataDir(tmp_path / "a")
    first.root.mkdir()
    name = replica_name(first)
    assert replica_name(first) == name and first.replica_name.read_text() == name + "\n"
    second = DataDir(tmp_path / "b")
    second.root.mkdir()
    assert replica_name(second) != name
