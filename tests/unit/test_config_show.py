"""`contextwm config show`'s table: each setting's value and the last source that set it; and
docs/settings.md names each setting's environment variable."""

from __future__ import annotations

import re
from pathlib import Path

from contextwm.config_show import Row, effective, rows
from contextwm.settings import ServerSettings, read_sources, settings_from

SETTINGS_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "settings.md").read_text()


def table(config: Path | None, environ: dict[str, str], flags: dict[str, object]) -> dict[str, Row]:
    sources = read_sources(config, environ, flags)
    return {r.setting: r for r in rows(settings_from(sources), sources, environ)}


def test_the_last_source_that_sets_a_setting_is_its_source(tmp_path: Path) -> None:
    config = tmp_path / "cwm.toml"
    config.write_text(
        "port = 1\nworkers = 3\nlog_level = 'debug'\n"
        "[conversation.weights.importance]\npinned = 0.9\n"
        '[models."gpt-4.1"]\ncontext_limit = 128000\n'
    )
    environ = {"CONTEXTWM_PORT": "2", "CONTEXTWM_LOG_LEVEL": "warning", "CONTEXTWM_TARGET": "x:1"}
    shown = table(config, environ, {"port": 3, "host": None})
    assert shown["port"] == Row("port", "3", "--port")
    assert shown["log_level"] == Row("log_level", "warning", "CONTEXTWM_LOG_LEVEL")
    assert shown["workers"] == Row("workers", "3", str(config))
    assert shown["host"] == Row("host", "127.0.0.1", "default")  # a flag not given
    pinned = "conversation.weights.importance.pinned"
    assert shown[pinned] == Row(pinned, "0.9", str(config))
    limit = 'models."gpt-4.1".context_limit'
    assert shown[limit] == Row(limit, "128000", str(config))
    # Fields of a model the file did not set are the model's defaults.
    assert shown['models."gpt-4.1".encoding'].source == "default"


def test_every_setting_is_shown_once_and_only_settings_are() -> None:
    shown = table(None, {}, {})
    assert list(shown) == [".".join(p) for p in effective(ServerSettings())]
    assert shown["models"] == Row("models", "(none)", "default")
    assert shown["socket"].value == "(unset)" and shown["indexer_process"].value == "true"
    assert "conversation.workspace_root" not in shown  # set per conversation, never here
    assert not any(name.startswith("conversation.weights._") for name in shown)


def test_the_settings_page_names_every_settings_environment_variable() -> None:
    section = SETTINGS_PAGE
    # <FLAG>, <CATEGORY>, ... stand for a name.
    documented = [
        re.compile(re.sub(r"<[A-Z]+>", "[A-Z_]+", name) + "$")
        for name in re.findall(r"`(CONTEXTWM_[A-Z_<>]+)`", section)
    ]
    for path in effective(ServerSettings()):
        if path in {("models",), ("retention", "namespaces")} or path[:2] in {
            ("context_window", "tool_restrictions"),
            ("context_window", "tools"),
        }:
            continue  # tables of their own (lists of tools: file only), documented by example
        variable = "CONTEXTWM_" + "__".join(path).upper()
        assert any(pattern.match(variable) for pattern in documented), variable
