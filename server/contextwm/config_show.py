"""`contextwm config show`: the effective settings in one table, each with where it came
from: the default, the TOML file, an environment variable or a flag (later ones win)."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from contextwm.domain.workspace_files import ToolRules
from contextwm.serve import FLAGS, flag_settings
from contextwm.settings import (
    ServerSettings,
    SettingsError,
    Source,
    environment_variables,
    read_sources,
    settings_from,
    without_password,
)

Setting = tuple[str, ...]  # a path: ("limits", "max_item_tokens")


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    setting: str  # dotted, as in the TOML file: limits.max_item_tokens
    value: str
    source: str  # "default", the file's path, CONTEXTWM_..., or --flag


def effective(settings: ServerSettings) -> dict[Setting, Any]:
    """Every setting's value, by path, in the order of the settings' fields."""
    return dict(_leaves(settings, ()))


def _leaves(value: Any, path: Setting) -> Iterator[tuple[Setting, Any]]:
    if isinstance(value, ToolRules):  # shown under the config file's own keys
        table = path[:-1]
        for state, tools in value.restrictions.items():
            yield (*table, "tool_restrictions", state), tools
        yield (*table, "tools", "base"), value.base
        yield (*table, "tools", "unrestricted"), value.unrestricted
        yield (*table, "tools", "exclusive_states"), tuple(sorted(value.exclusive))
        yield (*table, "tools", "priority"), tuple(value.restrictions)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            inner = (*path, f.name)
            if f.init and not _not_a_setting(inner):  # init=False fields are derived
                yield from _leaves(getattr(value, f.name), inner)
    elif isinstance(value, Mapping) and value:
        for key, inner in value.items():
            yield from _leaves(inner, (*path, str(key)))
    else:
        yield path, value


def _not_a_setting(path: Setting) -> bool:
    # A model's name is the key of its table; a conversation's own workspace_root and
    # retention are set per conversation only (the server-wide ones are the top-level
    # workspace_root and the retention tables).
    return (path[0] == "models" and path[-1] == "name") or path in {
        ("conversation", "workspace_root"),
        ("conversation", "retention"),
    }


def given(values: Mapping[str, Any], path: Setting = ()) -> Iterator[Setting]:
    """The settings a source's nested tables set (a table's keys, to the leaves)."""
    for key, value in values.items():
        if isinstance(value, Mapping):
            yield from given(value, (*path, key))
        else:
            yield (*path, key)


def rows(
    settings: ServerSettings, sources: Sequence[Source], environ: Mapping[str, str]
) -> list[Row]:
    """One row per setting: its effective value, and the last source that set it."""
    variables = environment_variables(environ)
    origin: dict[Setting, str] = {}
    for source in sources:
        for path in given(source.values):
            if source.name == "environment":
                origin[path] = variables[path]
            elif source.name == "flags":
                origin[path] = FLAGS[path[0]]
            else:
                origin[path] = source.name
    return [
        Row(
            _dotted(path),
            without_password(value) if path == ("store",) and value else _shown(value),
            origin.get(path, "default"),
        )
        for path, value in effective(settings).items()
    ]


def _dotted(path: Setting) -> str:
    # Keys that are not bare TOML keys (models."gpt-4.1") are quoted, as in the file.
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else f'"{p}"' for p in path)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if value is None or value == "":
        return "(unset)"
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) if value else "(none)"
    if isinstance(value, Mapping):  # an empty table: no models
        return "(none)"
    return str(value)


def render(table: Sequence[Row]) -> str:
    header = Row("setting", "value", "source")
    widths = [max(len(getattr(r, f)) for r in (header, *table)) for f in ("setting", "value")]
    return "\n".join(
        f"{r.setting:<{widths[0]}}  {r.value:<{widths[1]}}  {r.source}".rstrip()
        for r in (header, *table)
    )


def run_config_show(args: argparse.Namespace) -> int:
    """Prints the settings `contextwm serve` would run with, given the same flags and
    environment; exit 0, or 2 (with the message) for settings it would refuse."""
    config: Path | None = args.config
    try:
        sources = read_sources(config, os.environ, flag_settings(args))
        settings = settings_from(sources)
    except SettingsError as exc:
        print(f"error: {exc}")
        return 2
    print(render(rows(settings, sources, os.environ)))
    return 0
