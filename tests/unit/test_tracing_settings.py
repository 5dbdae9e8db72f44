"""Tracing's settings: otlp_endpoint from OpenTelemetry's standard variables (the traces
endpoint before the shared one, ours before both, the SDK's off switches before everything),
refused for what the server cannot send; the missing `otel` extra refused at start-up with
what to install, before anything is created; and the spans' table of memory operations
names real ContextService methods."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from contextwm.app import Service
from contextwm.config_show import rows
from contextwm.observability import tracing
from contextwm.settings import ServerSettings, SettingsError, load_settings, read_sources
from contextwm.settings import settings_from as settings_of
from contextwm.transport.tracing import OPERATIONS, store_id
from contextwm_client.v1 import contextwm_pb2 as pb

COLLECTOR = "http://collector:4317"


def endpoint(environ: dict[str, str], config: Path | None = None) -> str:
    return load_settings(config, environ).otlp_endpoint


def test_tracing_is_off_by_default() -> None:
    settings = ServerSettings()
    assert settings.otlp_endpoint == "" and settings.trace_content is False
    assert endpoint({"OTEL_SERVICE_NAME": "agent"}) == ""


def test_the_standard_variables_name_the_collector() -> None:
    assert endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": COLLECTOR}) == COLLECTOR
    # The traces endpoint is more specific than the shared one.
    both = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://shared:4317",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": COLLECTOR,
    }
    assert endpoint(both) == COLLECTOR
    # Ours names it for contextwm alone, over OpenTelemetry's.
    assert endpoint({**both, "CONTEXTWM_OTLP_ENDPOINT": "https://ours:4317"}) == (
        "https://ours:4317"
    )
    assert endpoint({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", **both}) == COLLECTOR


def test_the_sdks_off_switches_turn_tracing_off(tmp_path: Path) -> None:
    config = tmp_path / "cwm.toml"
    config.write_text(f"otlp_endpoint = '{COLLECTOR}'\n")
    assert endpoint({}, config) == COLLECTOR
    ours = {"CONTEXTWM_OTLP_ENDPOINT": COLLECTOR}
    assert endpoint({**ours, "OTEL_SDK_DISABLED": "true"}, config) == ""
    assert endpoint({**ours, "OTEL_TRACES_EXPORTER": "none"}, config) == ""
    assert endpoint({**ours, "OTEL_SDK_DISABLED": "false"}, config) == COLLECTOR


def test_what_the_server_cannot_send_is_refused() -> None:
    with pytest.raises(SettingsError, match=r"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf.*gRPC"):
        endpoint(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": COLLECTOR,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            }
        )
    with pytest.raises(SettingsError, match="otlp_endpoint = 'collector:4317'"):
        endpoint({"CONTEXTWM_OTLP_ENDPOINT": "collector:4317"})  # no scheme: TLS or not?


def test_config_show_names_the_variable_that_set_the_endpoint() -> None:
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": COLLECTOR, "CONTEXTWM_TRACE_CONTENT": "1"}
    sources = read_sources(None, environ, {})
    shown = {r.setting: r for r in rows(settings_of(sources), sources, environ)}
    assert (shown["otlp_endpoint"].value, shown["otlp_endpoint"].source) == (
        COLLECTOR,
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    )
    assert (shown["trace_content"].value, shown["trace_content"].source) == (
        "true",
        "CONTEXTWM_TRACE_CONTENT",
    )


def test_a_missing_extra_is_refused_with_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # None in sys.modules makes the import fail, as an absent package does.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    with pytest.raises(SettingsError, match=r'pip install "contextwm\[otel\]"'):
        tracing.probe()
    data_dir = tmp_path / "data"
    settings = ServerSettings(port=0, data_dir=data_dir, otlp_endpoint=COLLECTOR)
    with pytest.raises(SettingsError, match="otlp_endpoint is set"):
        Service.listen(settings)
    assert not data_dir.exists()  # refused before anything was made


def test_the_memory_operations_are_contextservice_methods() -> None:
    methods = pb.DESCRIPTOR.services_by_name["ContextService"].methods_by_name
    assert set(OPERATIONS) <= set(methods)
    names = {op.name for op in OPERATIONS.values()}
    assert names == {
        "create_memory_store",
        "delete_memory_store",
        "create_memory",
        "update_memory",
        "delete_memory",
        "search_memory",
    }


def test_a_store_is_a_conversation_or_a_namespace() -> None:
    assert store_id(pb.SearchRequest(namespace="t1", conversation_id="c")) == "t1/c"
    assert store_id(pb.SearchRequest(conversation_id="c")) == "default/c"
    assert store_id(pb.ForgetRequest(namespace="t1")) == "t1"
    assert store_id(pb.ApplyRetentionRequest(all_namespaces=True)) is None
    assert store_id(None) is None  # a request stream
