"""Server settings: one frozen object, loaded at the edge from a TOML file, then the
environment (CONTEXTWM_*), then command-line flags; passed down through constructors."""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextwm.conversations.validation import Limits, namespace_of
from contextwm.domain.categories import BudgetPatch, Category, ContributorType
from contextwm.domain.conversations import (
    ConversationSettings,
    SettingsPatch,
    WeightsPatch,
    apply_patch,
)
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.retention import RetentionPolicies, RetentionPolicy, check_policy
from contextwm.domain.usage import ModelSpec
from contextwm.domain.workspace_files import ChunkStrategy, ToolRules
from contextwm.tool_availability.config import rules_from_config
from contextwm.tool_availability.rules import default_rules

ENV_PREFIX = "CONTEXTWM_"
# Variables of the CLI's client commands (the server's address, the API key and TLS files
# they call it with), not settings: a shell that sets them can run `contextwm serve` too.
CLIENT_VARIABLES = frozenset(
    f"{ENV_PREFIX}{name}" for name in ("TARGET", "API_KEY", "TLS_CA", "TLS_CERT", "TLS_KEY")
)
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# The embedder setting's values: the bundled MiniLM on ONNX Runtime, the same quantised to
# int8 (its own vectors and index), the same on PyTorch, and a fast stand-in for tests.
EMBEDDERS = ("minilm", "minilm-int8", "minilm-torch", "hashing")
# The engines of one model, whose vectors can be compared with each other's.
MINILM = ("minilm", "minilm-int8", "minilm-torch")


def without_password(url: str) -> str:
    """A store URL fit to show or log: its password (in the user part or the query) masked."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    query = urllib.parse.urlencode(
        [
            (k, "***" if k == "password" else v)
            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


@dataclass(frozen=True, slots=True)
class ContextWindowSettings:
    """Workspace files (chunked reads, scrolling, searches, edits) and tool availability:
    the [context_window] table."""

    max_lines_per_chunk: int = 100
    chunking_strategy: ChunkStrategy = ChunkStrategy.SEMANTIC
    context_lines_around_matches: int = 3
    # The chunk cache's bound; it holds the files read and searched, and their chunk plans.
    cache_size_mb: float = 32.0
    # Larger files are refused whole (never cut) by reads, searches and edits.
    max_file_mb: float = 8.0
    # [context_window.tool_restrictions] and [context_window.tools].
    tools: ToolRules = field(default_factory=default_rules)

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 2**20)

    @property
    def cache_bytes(self) -> int:
        return int(self.cache_size_mb * 2**20)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Everything the service reads at start-up. See README "Settings" for each field."""

    host: str = "127.0.0.1"
    port: int = 50051
    socket: str | None = None
    data_dir: Path = Path("contextwm-data")
    # Where conversations are kept: "" for the SQLite file in data_dir, or a PostgreSQL URL
    # (postgresql://user:password@host:port/database) that several replicas can share; with
    # it, data_dir holds this replica's index cache and lock only.
    store: str = ""
    workers: int = 16
    log_level: str = "info"
    sqlite_synchronous: str = "NORMAL"
    embedder: str = "minilm"  # one of EMBEDDERS
    # What embeds queries, when not the embedder (one of MINILM, with a MiniLM embedder):
    # minilm-int8 keeps a query's time steady on a busy machine, the stored vectors unchanged.
    query_embedder: str = ""
    index_wait_seconds: float = 5.0
    indexer_batch_size: int = 32
    # Embed appended items in a child process (the bundled model only), this much nicer.
    indexer_process: bool = True
    indexer_niceness: int = 10
    # Serve from a session of its own (Linux): where the kernel shares CPU time between
    # sessions first (autogroup), busy processes of the starter's cannot crowd it out.
    own_session: bool = True
    # While appends keep the server busy, the indexer embeds this share of the time.
    indexer_busy_duty: float = 0.25
    index_save_seconds: float = 30.0
    # Conversations kept in memory; beyond them, those idle for 30 s are unloaded.
    max_loaded_conversations: int = 256
    grace_seconds: float = 10.0
    max_message_bytes: int = 64 * 1024 * 1024
    conversation: ConversationSettings = field(default_factory=ConversationSettings)
    limits: Limits = field(default_factory=Limits)
    # The models table: [models."name"] context_limit, reserved_reply_tokens, encoding.
    models: Mapping[str, ModelSpec] = field(default_factory=dict)
    # How long Watch can replay a conversation's events.
    event_retention_seconds: float = 3600.0
    # The agent's files, as a sidecar sees them: the workspace of conversations that name
    # none, and the directories a conversation's own workspace_root may lie under.
    workspace_root: str = ""
    workspace_allowed_roots: tuple[str, ...] = ()
    # Prometheus metrics over HTTP at /metrics; off unless a port is given (0 picks one).
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = None
    # The read-only web inspector; off unless a port is given (0 picks one). Off loopback it
    # needs require_api_keys, and TLS (served with the server's certificate) or insecure.
    inspector_host: str = "127.0.0.1"
    inspector_port: int | None = None
    # How often the background run applies the retention policies (0: never), and the
    # policies: [retention.default] and [retention.namespaces."<name>"].
    retention_interval_seconds: float = 600.0
    retention: RetentionPolicies = field(default_factory=RetentionPolicies)
    context_window: ContextWindowSettings = field(default_factory=ContextWindowSettings)
    # Every call needs an API key (authorization: Bearer ...) bound to its namespace. Off,
    # only loopback and the Unix socket may be listened on (unless insecure).
    require_api_keys: bool = False
    # TLS: the server's certificate chain and key (PEM files); with a client CA, clients must
    # present a certificate it signed (mutual TLS).
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_client_ca_file: str = ""
    # Listen on a non-loopback address without keys and TLS: only on a network you trust.
    insecure: bool = False
    # Quotas of each API key on this server (0: none): requests per second with bursts of
    # key_request_burst (0: twice the rate), and bytes per request or stream message.
    key_requests_per_second: float = 0.0
    key_request_burst: int = 0
    key_max_request_bytes: int = 0
    # The audit trail: "" none, "stderr", or a file appended to (one JSON line per key
    # change, refused call, deletion and retention run).
    audit_log: str = ""
    # OpenTelemetry traces: a span per call, sent over OTLP/gRPC to this collector
    # (http://collector:4317); "" off. The standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
    # OTEL_EXPORTER_OTLP_ENDPOINT set it too. Needs the `contextwm[otel]` extra.
    otlp_endpoint: str = ""
    # Spans also carry the query texts and the records read or written (sensitive: off).
    trace_content: bool = False


# The tables of ServerSettings, merged by functions of their own.
_TABLES = frozenset({"conversation", "limits", "models", "retention", "context_window"})


class SettingsError(ValueError):
    """A setting that cannot be used; the message names it and where it came from."""


# The type of a setting that is unset (None) by default, where it is not a string.
_UNSET_TYPES: dict[str, type] = {"metrics_port": int, "inspector_port": int}


def _coerce(name: str, value: Any, target: Any, source: str) -> Any:
    """Turns a TOML or environment value into the field's type."""
    kind = target if isinstance(target, type) else type(target)
    try:
        if kind is bool and isinstance(value, str):
            lowered = value.strip().lower()
            if lowered not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                raise ValueError(value)
            return lowered in {"1", "true", "yes", "on"}
        if kind is Path:
            return Path(value)
        if kind is tuple:  # a TOML list, or PATH-style "a:b" from the environment
            parts = value.split(os.pathsep) if isinstance(value, str) else list(value)
            return tuple(str(p) for p in parts if str(p))
        if target is None or kind is type(None):
            return str(value)
        return kind(value)
    except (TypeError, ValueError):
        raise SettingsError(
            f"{source}: {name} = {value!r} is not a valid {kind.__name__}"
        ) from None


def _merge(settings: ServerSettings, values: Mapping[str, Any], source: str) -> ServerSettings:
    top: dict[str, Any] = {}
    conversation: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    models = dict(settings.models)
    retention = settings.retention
    context_window = settings.context_window
    for key, value in values.items():
        if key == "conversation" and isinstance(value, Mapping):
            conversation.update(value)
        elif key == "limits" and isinstance(value, Mapping):
            limits.update(value)
        elif key == "models" and isinstance(value, Mapping):
            models.update(_models(value, models, source))
        elif key == "retention" and isinstance(value, Mapping):
            retention = _retention(retention, value, source)
        elif key == "context_window" and isinstance(value, Mapping):
            context_window = _context_window(context_window, value, source)
        elif key in ServerSettings.__dataclass_fields__ and key not in _TABLES:
            current = getattr(settings, key)
            target = type(current) if current is not None else _UNSET_TYPES.get(key, str)
            top[key] = _coerce(key, value, target, source)
        else:
            raise SettingsError(f"{source}: unknown setting {key!r}")
    new_limits = settings.limits
    if limits:
        fields = {f.name: f for f in dataclasses.fields(Limits)}
        changes = {}
        for k, v in limits.items():
            if k not in fields:
                raise SettingsError(f"{source}: unknown setting limits.{k}")
            changes[k] = _coerce(f"limits.{k}", v, type(getattr(new_limits, k)), source)
        new_limits = dataclasses.replace(new_limits, **changes)
    new_conversation = settings.conversation
    if conversation:
        new_conversation = _conversation(new_conversation, conversation, source)
    return dataclasses.replace(
        settings,
        **top,
        limits=new_limits,
        conversation=new_conversation,
        models=models,
        retention=retention,
        context_window=context_window,
    )


def _context_window(
    base: ContextWindowSettings, values: Mapping[str, Any], source: str
) -> ContextWindowSettings:
    """The [context_window] table and its tool_restrictions and tools tables."""
    scalars = {f.name for f in dataclasses.fields(ContextWindowSettings)} - {"tools"}
    changes: dict[str, Any] = {}
    tool_tables = {k: v for k, v in values.items() if k in ("tool_restrictions", "tools")}
    for k, v in values.items():
        where = f"context_window.{k}"
        if k in tool_tables:
            continue
        if k not in scalars:
            known = ", ".join(sorted(scalars | {"tool_restrictions", "tools"}))
            raise SettingsError(f"{source}: unknown setting {where} (known: {known})")
        if k == "chunking_strategy":
            try:
                changes[k] = ChunkStrategy(str(v))
            except ValueError:
                known = ", ".join(s.value for s in ChunkStrategy)
                raise SettingsError(f"{source}: {where} = {v!r}: expected one of {known}") from None
        else:
            changes[k] = _coerce(where, v, type(getattr(base, k)), source)
    new = dataclasses.replace(base, **changes)
    if tool_tables:
        try:
            new = dataclasses.replace(
                new, tools=rules_from_config(tool_tables, source, base=new.tools)
            )
        except InvalidArgument as exc:
            raise SettingsError(exc.message) from None
    return new


_POLICY_TYPES: Mapping[str, type] = {
    "max_age_seconds": float,
    "max_archived_items": int,
    "inactive_seconds": float,
    "remove_pinned": bool,
}


def _retention(
    base: RetentionPolicies, values: Mapping[str, Any], source: str
) -> RetentionPolicies:
    """The [retention.default] and [retention.namespaces."<name>"] tables; a later source
    may change single fields of a policy."""
    unknown = set(values) - {"default", "namespaces"}
    if unknown:
        raise SettingsError(
            f"{source}: unknown setting retention.{min(unknown)} (the tables are"
            ' retention.default and retention.namespaces."<name>")'
        )
    default = base.default
    if "default" in values:
        default = _policy(base.default, values["default"], "retention.default", source)
    namespaces = dict(base.namespaces)
    tables = values.get("namespaces", {})
    if not isinstance(tables, Mapping):
        raise SettingsError(f'{source}: retention.namespaces must hold tables ."<name>"')
    for name, table in tables.items():
        where = f'retention.namespaces."{name}"'
        try:
            namespace_of(name)
        except InvalidArgument as exc:
            raise SettingsError(f"{source}: {where}: {exc.message}") from None
        namespaces[name] = _policy(namespaces.get(name, RetentionPolicy()), table, where, source)
    return RetentionPolicies(default, namespaces)


def _policy(base: RetentionPolicy, table: Any, where: str, source: str) -> RetentionPolicy:
    """One policy table: each field coerced and checked, over the fields of base."""
    if not isinstance(table, Mapping):
        raise SettingsError(f"{source}: {where} must be a table of {', '.join(_POLICY_TYPES)}")
    unknown = set(table) - set(_POLICY_TYPES)
    if unknown:
        raise SettingsError(
            f"{source}: unknown setting {where}.{min(unknown)} (known: {', '.join(_POLICY_TYPES)})"
        )
    fields = {k: _coerce(f"{where}.{k}", v, _POLICY_TYPES[k], source) for k, v in table.items()}
    policy = RetentionPolicy(**fields)
    try:
        check_policy(policy, where)
    except InvalidArgument as exc:
        raise SettingsError(f"{source}: {exc.message}") from None
    return policy.over(base)


def _models(
    values: Mapping[str, Any], known: Mapping[str, ModelSpec], source: str
) -> dict[str, ModelSpec]:
    """The [models."name"] tables; a later source may change single fields of a model."""
    out: dict[str, ModelSpec] = {}
    for name, table in values.items():
        if not isinstance(table, Mapping):
            raise SettingsError(f"{source}: models.{name} must be a table")
        unknown = set(table) - {"context_limit", "reserved_reply_tokens", "encoding"}
        if unknown:
            raise SettingsError(f"{source}: unknown setting models.{name}.{min(unknown)}")
        base = known.get(name)
        fields: dict[str, Any] = (
            {
                "context_limit": base.context_limit,
                "reserved_reply_tokens": base.reserved_reply_tokens,
                "encoding": base.encoding,
            }
            if base
            else {}
        )
        for k, v in table.items():
            fields[k] = _coerce(f"models.{name}.{k}", v, str if k == "encoding" else int, source)
        if "context_limit" not in fields:
            raise SettingsError(f"{source}: models.{name} needs a context_limit")
        try:
            out[name] = ModelSpec(name=name, **fields)
        except ValueError as exc:
            raise SettingsError(f"{source}: {exc}") from None
    return out


def _conversation(
    base: ConversationSettings, values: Mapping[str, Any], source: str
) -> ConversationSettings:
    tables = {"weights", "category_budgets", "contributor_weights"}
    fields = {f.name for f in dataclasses.fields(SettingsPatch)} - tables
    patch: dict[str, Any] = {}
    weights: WeightsPatch | None = None
    for k, v in values.items():
        if k == "weights" and isinstance(v, Mapping):
            weights = _weights(v, source)
        elif k == "workspace_root":
            raise SettingsError(
                f"{source}: conversation.workspace_root: set the server's workspace_root instead"
            )
        elif k == "retention":
            raise SettingsError(
                f"{source}: conversation.retention: set the [retention.default] table instead"
                " (a conversation's own policy is set at create or update time)"
            )
        elif k == "category_budgets" and isinstance(v, Mapping):
            patch[k] = _category_budgets(v, source)
        elif k == "contributor_weights" and isinstance(v, Mapping):
            patch[k] = _contributor_weights(v, source)
        elif k in fields:
            patch[k] = _coerce(f"conversation.{k}", v, type(getattr(base, k)), source)
        else:
            raise SettingsError(f"{source}: unknown setting conversation.{k}")
    try:
        return apply_patch(base, SettingsPatch(**patch, weights=weights))
    except InvalidArgument as exc:
        raise SettingsError(f"{source}: conversation.{exc.message}") from None


def _category_budgets(values: Mapping[str, Any], source: str) -> dict[Category, BudgetPatch]:
    """[conversation.category_budgets.<category>] tables of share, min_share, max_share."""
    out: dict[Category, BudgetPatch] = {}
    for name, table in values.items():
        where = f"conversation.category_budgets.{name}"
        if name not in {c.value for c in Category} or not isinstance(table, Mapping):
            known = ", ".join(c.value for c in Category)
            raise SettingsError(f"{source}: {where} must be a table, one of {known}")
        unknown = set(table) - {"share", "min_share", "max_share"}
        if unknown:
            raise SettingsError(f"{source}: unknown setting {where}.{min(unknown)}")
        out[Category(name)] = BudgetPatch(
            **{k: float(_coerce(f"{where}.{k}", v, float, source)) for k, v in table.items()}
        )
    return out


def _contributor_weights(values: Mapping[str, Any], source: str) -> dict[ContributorType, float]:
    """The [conversation.contributor_weights] table: a weight per contributor type."""
    out: dict[ContributorType, float] = {}
    for name, v in values.items():
        if name not in {t.value for t in ContributorType}:
            known = ", ".join(t.value for t in ContributorType)
            raise SettingsError(
                f"{source}: unknown contributor conversation.contributor_weights.{name}"
                f" (known: {known})"
            )
        where = f"conversation.contributor_weights.{name}"
        out[ContributorType(name)] = float(_coerce(where, v, float, source))
    return out


def _weights(values: Mapping[str, Any], source: str) -> WeightsPatch:
    """The [conversation.weights] table; every number coerced, every key checked."""
    unknown = set(values) - {"recency", "similarity", "importance", "role"}
    if unknown:
        raise SettingsError(f"{source}: unknown setting conversation.weights.{min(unknown)}")

    def number(name: str, value: Any) -> float:
        return float(_coerce(f"conversation.weights.{name}", value, float, source))

    def table(name: str) -> dict[str, float]:
        entries = values.get(name, {})
        if not isinstance(entries, Mapping):
            raise SettingsError(f"{source}: conversation.weights.{name} must be a table")
        return {k: number(f"{name}.{k}", v) for k, v in entries.items()}

    return WeightsPatch(
        recency=number("recency", values["recency"]) if "recency" in values else None,
        similarity=number("similarity", values["similarity"]) if "similarity" in values else None,
        importance=table("importance"),
        role=table("role"),
    )


def environment_variables(environ: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """The CONTEXTWM_* variables by the setting each sets, as a path:
    CONTEXTWM_PORT -> ("port",); CONTEXTWM_LIMITS__MAX_ITEM_TOKENS -> ("limits", "max_item_tokens").
    OpenTelemetry's own variables set otlp_endpoint where CONTEXTWM_OTLP_ENDPOINT does not
    (see `_otel_variable`).
    """
    variables = {
        tuple(name[len(ENV_PREFIX) :].lower().split("__")): name
        for name in environ
        if name.startswith(ENV_PREFIX) and name not in CLIENT_VARIABLES
    }
    otel = _otel_variable(environ)
    if otel is not None and (otel not in OTEL_ENDPOINTS or ("otlp_endpoint",) not in variables):
        variables[("otlp_endpoint",)] = otel
    return variables


# OpenTelemetry's standard variables (its SDK's "environment variable specification"): the
# first of the endpoints that is set names the collector; either switch turns tracing off.
OTEL_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
OTEL_DISABLED = "OTEL_SDK_DISABLED"
OTEL_TRACES_EXPORTER = "OTEL_TRACES_EXPORTER"
OTEL_PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


def _otel_variable(environ: Mapping[str, str]) -> str | None:
    """The OpenTelemetry variable that decides otlp_endpoint, if one does: OTEL_SDK_DISABLED
    (or OTEL_TRACES_EXPORTER=none) turns tracing off whatever else says so; otherwise the
    first endpoint variable that is set."""
    if environ.get(OTEL_DISABLED, "").strip().lower() == "true":
        return OTEL_DISABLED
    if environ.get(OTEL_TRACES_EXPORTER, "").strip().lower() == "none":
        return OTEL_TRACES_EXPORTER
    return next((name for name in OTEL_ENDPOINTS if environ.get(name, "").strip()), None)


def _otel_value(name: str, environ: Mapping[str, str]) -> str:
    """otlp_endpoint as OpenTelemetry's variable name gives it ("" for a switch that turns
    tracing off).

    Raises:
        SettingsError: the variables ask for OTLP over HTTP, which this server does not send.
    """
    if name not in OTEL_ENDPOINTS:
        return ""
    for variable in OTEL_PROTOCOLS:
        protocol = environ.get(variable, "").strip()
        if protocol:
            if protocol != "grpc":
                raise SettingsError(
                    f"environment: {variable}={protocol}: contextwm sends traces over OTLP/gRPC"
                    f" only; set it to grpc (or unset it) and point {name} at the collector's"
                    " gRPC port (4317)"
                )
            break
    return environ[name].strip()


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    """CONTEXTWM_PORT=1 -> port; CONTEXTWM_LIMITS__MAX_ITEM_TOKENS=5 -> limits.max_item_tokens;
    OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4317 -> otlp_endpoint.

    Raises:
        SettingsError: OpenTelemetry's variables ask for what this server cannot do.
    """
    out: dict[str, Any] = {}
    for path, name in environment_variables(environ).items():
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = (
            environ[name] if name.startswith(ENV_PREFIX) else _otel_value(name, environ)
        )
    return out


@dataclass(frozen=True, slots=True)
class Source:
    """The settings one place gives, as nested tables: the TOML file, the environment or the
    flags."""

    name: str  # as messages name it: the file's path, "environment" or "flags"
    values: Mapping[str, Any]


def read_sources(
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[Source]:
    """The file, the environment and the flags (None values are flags not given), in the
    order they apply.

    Raises:
        SettingsError: the file cannot be read or is not TOML.
    """
    sources = []
    if config_file is not None:
        try:
            data = tomllib.loads(config_file.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SettingsError(f"cannot read config file {config_file}: {exc}") from None
        sources.append(Source(str(config_file), data))
    if environ:
        sources.append(Source("environment", _from_environment(environ)))
    if overrides:
        sources.append(Source("flags", {k: v for k, v in overrides.items() if v is not None}))
    return sources


def load_settings(
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ServerSettings:
    """File, then environment, then flags; later sources win.

    Raises:
        SettingsError: naming the setting and its source.
    """
    return settings_from(read_sources(config_file, environ, overrides))


def settings_from(sources: Sequence[Source]) -> ServerSettings:
    """The defaults, with each source applied in turn, checked.

    Raises:
        SettingsError: naming the setting and its source.
    """
    settings = ServerSettings()
    for source in sources:
        settings = _merge(settings, source.values, source.name)
    if settings.sqlite_synchronous not in {"NORMAL", "FULL"}:
        raise SettingsError("sqlite_synchronous must be NORMAL or FULL")
    if settings.store and not settings.store.startswith(POSTGRES_SCHEMES):
        raise SettingsError(
            "store must be empty (the SQLite file in data_dir) or a PostgreSQL URL such as"
            " postgresql://user:password@host:5432/contextwm"
        )
    if settings.max_loaded_conversations < 1:
        raise SettingsError("max_loaded_conversations must be at least 1")
    if not 0 <= settings.indexer_niceness <= 19:
        raise SettingsError("indexer_niceness must be between 0 and 19")
    if not 0 < settings.indexer_busy_duty <= 1:
        raise SettingsError("indexer_busy_duty must be more than 0 and at most 1")
    for name in ("port", "metrics_port", "inspector_port"):
        port = getattr(settings, name)
        if port is not None and not 0 <= port <= 65535:
            raise SettingsError(
                f"{name} must be between 0 and 65535 (0 picks a free port), got {port}"
            )
    interval = settings.retention_interval_seconds
    if not (math.isfinite(interval) and interval >= 0):
        raise SettingsError(
            f"retention_interval_seconds must be 0 (no background run) or more, got {interval!r}"
        )
    if settings.limits.max_items_per_namespace < 0:
        raise SettingsError("limits.max_items_per_namespace must be 0 (no quota) or more")
    rate = settings.key_requests_per_second
    if not (math.isfinite(rate) and rate >= 0):
        raise SettingsError(f"key_requests_per_second must be 0 (no quota) or more, got {rate!r}")
    if settings.key_request_burst < 0 or settings.key_max_request_bytes < 0:
        raise SettingsError(
            "key_request_burst and key_max_request_bytes must be 0 (the default, none) or more"
        )
    endpoint = urllib.parse.urlsplit(settings.otlp_endpoint)
    if settings.otlp_endpoint and (endpoint.scheme not in {"http", "https"} or not endpoint.netloc):
        raise SettingsError(
            f"otlp_endpoint = {settings.otlp_endpoint!r}: expected the collector's OTLP/gRPC"
            " address as a URL, http://collector:4317 (plaintext) or https://... (TLS)"
        )
    if settings.embedder not in EMBEDDERS:
        raise SettingsError(
            "embedder must be minilm (the bundled model), minilm-int8 (the same, quantised: "
            "faster, slightly different vectors), minilm-torch (the bundled model on PyTorch) "
            "or hashing (tests)"
        )
    if settings.query_embedder and not (
        settings.query_embedder in MINILM and settings.embedder in MINILM
    ):
        raise SettingsError(
            f"query_embedder = {settings.query_embedder!r} with embedder ="
            f" {settings.embedder!r}: queries must be embedded by the stored vectors' model"
            " (on any of its engines), so query_embedder is empty (the embedder) or one of"
            " minilm, minilm-int8 and minilm-torch with a MiniLM embedder"
        )
    for root in (settings.workspace_root, *settings.workspace_allowed_roots):
        if root and not Path(root).is_dir():
            raise SettingsError(f"workspace root {root!r} is not an existing directory")
    # Relative roots are taken from where the server starts (`serve --workspace .` in the
    # agent's project): the roots are compared with conversations' own, which are absolute.
    settings = dataclasses.replace(
        settings,
        workspace_root=os.path.abspath(settings.workspace_root) if settings.workspace_root else "",
        workspace_allowed_roots=tuple(
            os.path.abspath(r) for r in settings.workspace_allowed_roots if r
        ),
    )
    window = settings.context_window
    if window.max_lines_per_chunk < 1:
        raise SettingsError("context_window.max_lines_per_chunk must be at least 1")
    if window.context_lines_around_matches < 0:
        raise SettingsError("context_window.context_lines_around_matches may not be negative")
    if not (window.cache_size_mb >= 0 and math.isfinite(window.cache_size_mb)):
        raise SettingsError("context_window.cache_size_mb must be 0 (no cache) or more")
    if not (window.max_file_mb > 0 and math.isfinite(window.max_file_mb)):
        raise SettingsError("context_window.max_file_mb must be more than 0")
    if settings.conversation.model and settings.conversation.model not in settings.models:
        raise SettingsError(
            f"conversation.model = {settings.conversation.model!r} is not in the models table"
        )
    return settings
