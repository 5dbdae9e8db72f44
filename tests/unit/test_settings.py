"""Tests for contextwm.settings.load_settings: precedence, nesting, tables and errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from contextwm.domain.retention import RetentionPolicy
from contextwm.settings import ServerSettings, SettingsError, load_settings


def toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "contextwm.toml"
    path.write_text(text)
    return path


def test_defaults() -> None:
    s = load_settings()
    assert s == ServerSettings()
    assert s.conversation.window_max_tokens == 8000 and s.conversation.window_max_items == 100


def test_precedence_file_then_environment_then_flags(tmp_path: Path) -> None:
    config = toml(tmp_path, 'port = 1111\nhost = "filehost"\nworkers = 3\nlog_level = "debug"\n')
    env = {"CONTEXTWM_PORT": "2222", "CONTEXTWM_HOST": "envhost", "OTHER_PORT": "9"}
    s = load_settings(config, env, {"port": 3333, "host": None})
    assert s.port == 3333  # flag wins
    assert s.host == "envhost"  # a None flag is "not given"
    assert s.workers == 3 and s.log_level == "debug"  # file values nobody overrode
    assert load_settings(config, env).port == 2222
    assert load_settings(config).port == 1111


def test_environment_values_are_coerced() -> None:
    env = {
        "CONTEXTWM_PORT": "5",
        "CONTEXTWM_DATA_DIR": "/tmp/x",
        "CONTEXTWM_INDEX_WAIT_SECONDS": "0.25",
        "CONTEXTWM_SOCKET": "/run/cwm.sock",
        "CONTEXTWM_TARGET": "ignored:1",  # the CLI client's, not a server setting
    }
    s = load_settings(None, env)
    assert s.port == 5 and s.data_dir == Path("/tmp/x") and s.index_wait_seconds == 0.25
    assert s.socket == "/run/cwm.sock"


def test_metrics_are_off_by_default_and_take_a_port_from_any_source(tmp_path: Path) -> None:
    assert ServerSettings().metrics_port is None
    env = {"CONTEXTWM_METRICS_PORT": "0", "CONTEXTWM_METRICS_HOST": "0.0.0.0"}
    s = load_settings(toml(tmp_path, "metrics_port = 9100\n"), env)
    assert (s.metrics_port, s.metrics_host) == (0, "0.0.0.0")
    assert load_settings(None, env, {"metrics_port": 9200}).metrics_port == 9200
    with pytest.raises(SettingsError, match="metrics_port"):
        load_settings(None, {"CONTEXTWM_METRICS_PORT": "70000"})
    with pytest.raises(SettingsError, match="metrics_port = 'on' is not a valid int"):
        load_settings(None, {"CONTEXTWM_METRICS_PORT": "on"})


@pytest.mark.parametrize("setting", ["port", "metrics_port", "inspector_port"])
def test_a_port_out_of_range_is_refused_naming_it(setting: str) -> None:
    with pytest.raises(SettingsError, match=f"^{setting} must be between 0 and 65535"):
        load_settings(None, {}, {setting: 99999})
    with pytest.raises(SettingsError, match=f"^{setting} must be between 0 and 65535"):
        load_settings(None, {}, {setting: -1})
    assert getattr(load_settings(None, {}, {setting: 0}), setting) == 0


def test_the_inspector_is_off_by_default_and_takes_a_port_from_any_source(
    tmp_path: Path,
) -> None:
    assert ServerSettings().inspector_port is None
    assert ServerSettings().inspector_host == "127.0.0.1"
    s = load_settings(
        toml(tmp_path, "inspector_port = 8080\n"), {"CONTEXTWM_INSPECTOR_HOST": "::1"}
    )
    assert (s.inspector_port, s.inspector_host) == (8080, "::1")
    assert load_settings(None, {"CONTEXTWM_INSPECTOR_PORT": "0"}).inspector_port == 0


def test_nested_environment_limits() -> None:
    s = load_settings(None, {"CONTEXTWM_LIMITS__MAX_ITEM_TOKENS": "5"})
    assert s.limits.max_item_tokens == 5
    assert s.limits.max_batch_items == ServerSettings().limits.max_batch_items


def test_nested_environment_conversation() -> None:
    env = {
        "CONTEXTWM_CONVERSATION__WINDOW_MAX_TOKENS": "400",
        "CONTEXTWM_CONVERSATION__ADAPTIVE_WINDOW": "yes",
        "CONTEXTWM_CONVERSATION__SIMILARITY_THRESHOLD": "0.5",
    }
    c = load_settings(None, env).conversation
    assert (c.window_max_tokens, c.adaptive_window, c.similarity_threshold) == (400, True, 0.5)


def test_nested_environment_weights() -> None:
    env = {
        "CONTEXTWM_CONVERSATION__WEIGHTS__RECENCY": "0.5",
        "CONTEXTWM_CONVERSATION__WEIGHTS__IMPORTANCE__PINNED": "2",
    }
    w = load_settings(None, env).conversation.weights
    assert w.recency == 0.5 and w.importance["pinned"] == 2.0


def test_conversation_tables(tmp_path: Path) -> None:
    config = toml(
        tmp_path,
        """
[conversation]
window_max_tokens = 1234
window_max_items = 20
encoding = "o200k_base"
adaptive_window = true

[conversation.weights]
recency = 0.1

[conversation.weights.importance]
pinned = 2.0

[conversation.weights.role]
tool = 0.05

[limits]
max_page_size = 10
""",
    )
    s = load_settings(config)
    c = s.conversation
    assert (c.window_max_tokens, c.window_max_items, c.encoding, c.adaptive_window) == (
        1234,
        20,
        "o200k_base",
        True,
    )
    assert c.weights.recency == 0.1 and c.weights.similarity == 0.4
    assert c.weights.importance["pinned"] == 2.0 and c.weights.importance["error"] == 0.6
    assert c.weights.role["tool"] == 0.05 and c.weights.role["user"] == 0.3
    assert s.limits.max_page_size == 10


def test_environment_overrides_one_conversation_key_of_the_file(tmp_path: Path) -> None:
    config = toml(tmp_path, "[conversation]\nwindow_max_tokens = 100\nwindow_max_items = 7\n")
    c = load_settings(config, {"CONTEXTWM_CONVERSATION__WINDOW_MAX_TOKENS": "200"}).conversation
    assert (c.window_max_tokens, c.window_max_items) == (200, 7)


@pytest.mark.parametrize(
    ("text", "env", "named"),
    [
        ("bogus = 1\n", {}, "bogus"),
        ("[limits]\nmax_bogus = 1\n", {}, "limits.max_bogus"),
        ("[conversation]\nwindow_size = 1\n", {}, "conversation.window_size"),
        ("", {"CONTEXTWM_BOGUS": "1"}, "bogus"),
        ("", {"CONTEXTWM_LIMITS__NOPE": "1"}, "limits.nope"),
        ("", {"CONTEXTWM_CONVERSATION__NOPE": "1"}, "conversation.nope"),
    ],
)
def test_unknown_keys_raise_naming_the_key(
    tmp_path: Path, text: str, env: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingsError, match=named.replace(".", r"\.")):
        load_settings(toml(tmp_path, text), env)


def test_unknown_weights_key_raises(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="recncy"):
        load_settings(toml(tmp_path, "[conversation.weights]\nrecncy = 0.9\n"))


@pytest.mark.parametrize(
    ("text", "env", "named"),
    [
        ('port = "abc"\n', {}, "port"),
        ("", {"CONTEXTWM_PORT": "eighty"}, "port"),
        ("", {"CONTEXTWM_LIMITS__MAX_ITEM_TOKENS": "many"}, "limits.max_item_tokens"),
        ("[conversation]\nwindow_max_tokens = 0\n", {}, "window_max_tokens"),
        ('[conversation]\nencoding = "latin1"\n', {}, "encoding"),
        ("[conversation]\nsimilarity_threshold = 3.0\n", {}, "similarity_threshold"),
        ("", {"CONTEXTWM_CONVERSATION__ADAPTIVE_WINDOW": "maybe"}, "adaptive_window"),
        ("[conversation.weights.importance]\nurgent = 1.0\n", {}, "urgent"),
        ("[conversation.weights.role]\nrobot = 1.0\n", {}, "robot"),
        ("[conversation.weights]\nrecency = 1000.0\n", {}, "recency"),
        ('sqlite_synchronous = "OFF"\n', {}, "sqlite_synchronous"),
        ('embedder = "bert"\n', {}, "embedder"),
        ('query_embedder = "bert"\n', {}, "query_embedder"),
        ('embedder = "hashing"\nquery_embedder = "minilm-int8"\n', {}, "query_embedder"),
        ("", {"CONTEXTWM_QUERY_EMBEDDER": "hashing"}, "query_embedder"),
        ("indexer_busy_duty = 0.0\n", {}, "indexer_busy_duty"),
        ("", {"CONTEXTWM_INDEXER_BUSY_DUTY": "1.5"}, "indexer_busy_duty"),
    ],
)
def test_bad_values_raise_naming_the_key(
    tmp_path: Path, text: str, env: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingsError, match=named):
        load_settings(toml(tmp_path, text), env)


def test_unreadable_file_raises(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read"):
        load_settings(tmp_path / "missing.toml")
    with pytest.raises(SettingsError, match="cannot read"):
        load_settings(toml(tmp_path, "port = \n"))


def test_flags_are_validated_too() -> None:
    with pytest.raises(SettingsError, match="flags"):
        load_settings(None, None, {"no_such_flag": 1})


def test_models_table(tmp_path: Path) -> None:
    config = toml(
        tmp_path,
        '[models."claude-sonnet"]\ncontext_limit = 200000\nreserved_reply_tokens = 32768\n'
        '[models."gpt-4.1"]\ncontext_limit = 128000\nencoding = "o200k_base"\n'
        '[conversation]\nmodel = "gpt-4.1"\n',
    )
    s = load_settings(config, {"CONTEXTWM_MODELS__gpt-4.1__RESERVED_REPLY_TOKENS": "4096"})
    claude, gpt = s.models["claude-sonnet"], s.models["gpt-4.1"]
    assert (claude.context_limit, claude.reserved_reply_tokens, claude.encoding) == (
        200_000,
        32_768,
        "cl100k_base",
    )
    # The environment changed one field of a model the file defined.
    assert (gpt.context_limit, gpt.reserved_reply_tokens, gpt.encoding) == (
        128_000,
        4096,
        "o200k_base",
    )
    assert s.conversation.model == "gpt-4.1"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[models.m]\nreserved_reply_tokens = 5\n", "models.m needs a context_limit"),
        ("[models.m]\ncontext_limit = 100\nwindow = 5\n", "models.m.window"),
        ('[models.m]\ncontext_limit = "lots"\n', "models.m.context_limit"),
        ('[models.m]\ncontext_limit = 100\nencoding = "gpt2"\n', "unknown encoding 'gpt2'"),
        ("[models.m]\ncontext_limit = 100\nreserved_reply_tokens = 100\n", "reserved_reply"),
        ('[conversation]\nmodel = "nope"\n', "'nope' is not in the models table"),
        ("[conversation]\ncompaction_threshold = 0\n", "compaction_threshold"),
    ],
)
def test_bad_models_raise_naming_them(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(named)):
        load_settings(toml(tmp_path, text))


def test_retention_tables(tmp_path: Path) -> None:
    config = toml(
        tmp_path,
        "retention_interval_seconds = 60\n"
        "[retention.default]\nmax_age_seconds = 2592000\ninactive_seconds = 7776000\n"
        '[retention.namespaces."team-a"]\nmax_archived_items = 500\nremove_pinned = true\n',
    )
    env = {"CONTEXTWM_RETENTION__DEFAULT__MAX_AGE_SECONDS": "86400"}
    s = load_settings(config, env)
    assert s.retention_interval_seconds == 60.0
    assert s.retention.default == RetentionPolicy(
        max_age_seconds=86400.0, inactive_seconds=7_776_000.0
    )
    # A namespace's table holds only the fields it sets; the default fills in the others.
    assert s.retention.namespaces["team-a"] == RetentionPolicy(
        max_archived_items=500, remove_pinned=True
    )
    assert s.retention.for_namespace("team-a") == RetentionPolicy(86400.0, 500, 7_776_000.0, True)
    assert load_settings().retention.for_namespace("team-a").is_off


@pytest.mark.parametrize(
    ("text", "env", "named"),
    [
        ("[retention.default]\nmax_age_seconds = -1\n", {}, "retention.default.max_age_seconds"),
        ("", {"CONTEXTWM_RETENTION__DEFAULT__INACTIVE_SECONDS": "soon"}, "inactive_seconds"),
        ("[retention.default]\nmax_age = 5\n", {}, "unknown setting retention.default.max_age"),
        ("[retention.weekly]\nmax_age_seconds = 5\n", {}, "unknown setting retention.weekly"),
        (
            '[retention.namespaces."team a"]\nmax_age_seconds = 5\n',
            {},
            "retention.namespaces.\"team a\": invalid namespace 'team a'",
        ),
        (
            '[retention.namespaces."t"]\nmax_archived_items = -3\n',
            {},
            'retention.namespaces."t".max_archived_items must be between 0',
        ),
        ("[conversation.retention]\nmax_age_seconds = 5\n", {}, "set the [retention.default]"),
        ("retention_interval_seconds = -1\n", {}, "retention_interval_seconds must be 0"),
    ],
)
def test_bad_retention_settings_raise_naming_them(
    tmp_path: Path, text: str, env: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingsError, match=re.escape(named)):
        load_settings(toml(tmp_path, text), env)


def test_the_context_window_table_from_file_and_environment(tmp_path: Path) -> None:
    config = toml(
        tmp_path,
        "[context_window]\n"
        'max_lines_per_chunk = 60\nchunking_strategy = "functions"\n'
        "context_lines_around_matches = 1\ncache_size_mb = 4\n"
        "[context_window.tool_restrictions]\n"
        'large_file_viewing = ["scroll_file_chunk"]\nreviewing = ["comment_on_diff"]\n',
    )
    s = load_settings(config, {"CONTEXTWM_CONTEXT_WINDOW__MAX_LINES_PER_CHUNK": "80"})
    window = s.context_window
    assert window.max_lines_per_chunk == 80  # the environment wins over the file
    assert window.chunking_strategy.value == "functions"
    assert (window.context_lines_around_matches, window.cache_bytes) == (1, 4 * 2**20)
    assert window.tools.restrictions["large_file_viewing"] == ("scroll_file_chunk",)
    assert window.tools.restrictions["reviewing"] == ("comment_on_diff",)
    assert "interactive_commands" in window.tools.restrictions  # defaults kept


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('chunking_strategy = "ast"', "chunking_strategy = 'ast': expected one of lines"),
        ("enable_scrolling = true", "unknown setting context_window.enable_scrolling"),
        ("max_lines_per_chunk = 0", "max_lines_per_chunk must be at least 1"),
        ("cache_size_mb = -1", "cache_size_mb must be 0"),
        ("[context_window.tool_restrictions]\nsearch_active = 3", "search_active"),
    ],
)
def test_bad_context_window_settings_are_named(tmp_path: Path, text: str, message: str) -> None:
    config = toml(tmp_path, f"[context_window]\n{text}\n")
    with pytest.raises(SettingsError, match=re.escape(message)):
        load_settings(config)
