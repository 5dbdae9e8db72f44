"""OpenTelemetry's SDK set up from the settings: a tracer provider whose spans go over
OTLP/gRPC to the collector otlp_endpoint names. Imported only when tracing is on, so that a
server without it loads none of OpenTelemetry."""

from __future__ import annotations

import importlib
import logging
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextwm.settings import ServerSettings, SettingsError

if TYPE_CHECKING:  # imported when used: the probe must run before anything of OpenTelemetry
    from opentelemetry.trace import Tracer, TracerProvider

log = logging.getLogger(__name__)

INSTALL = 'pip install "contextwm[otel]"'
# What the SDK and its OTLP/gRPC exporter need, probed before anything is built.
REQUIRED = (
    "opentelemetry.trace",
    "opentelemetry.sdk.trace",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
)
TRACER_NAME = "contextwm"


def probe() -> None:
    """Checks once, at start-up, that the optional packages are installed.

    Raises:
        SettingsError: one is missing; the message says what to install.
    """
    for module in REQUIRED:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise SettingsError(
                f"otlp_endpoint is set, but OpenTelemetry cannot be loaded ({exc}): {INSTALL}"
                " (the SDK and its OTLP/gRPC exporter), or unset otlp_endpoint and the"
                " OTEL_EXPORTER_OTLP_*ENDPOINT variables"
            ) from None


@dataclass
class Tracing:
    """A tracer provider and who owns it: one built from the settings is flushed and shut
    down with the server; one a caller passed in (tests) is the caller's."""

    provider: TracerProvider
    owned: bool

    @classmethod
    def start(cls, settings: ServerSettings, provider: TracerProvider | None = None) -> Tracing:
        """The provider to trace calls with: provider if given, else one that batches spans
        to settings.otlp_endpoint.

        The exporter reads OpenTelemetry's other variables itself (OTEL_EXPORTER_OTLP_HEADERS,
        _CERTIFICATE, _TIMEOUT, _COMPRESSION; the URL's scheme says whether TLS is used),
        the provider its sampler's (OTEL_TRACES_SAMPLER, default: the caller's decision,
        else every call) and the resource's (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES;
        the service is "contextwm" unless they name it).

        Raises:
            SettingsError: OpenTelemetry is not installed.
        """
        if provider is not None:
            return cls(provider, owned=False)
        probe()
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create()
        if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: "contextwm"}))
        sdk = SdkTracerProvider(resource=resource)
        # The URL's scheme decides TLS, as the settings say (not OTEL_EXPORTER_OTLP_INSECURE).
        plaintext = urllib.parse.urlsplit(settings.otlp_endpoint).scheme == "http"
        exporter = OTLPSpanExporter(endpoint=settings.otlp_endpoint, insecure=plaintext)
        # Batched, off the call path: a call only queues its span; a full queue drops spans
        # rather than slowing calls.
        sdk.add_span_processor(BatchSpanProcessor(exporter))
        log.info("tracing calls to %s (OTLP/gRPC)", settings.otlp_endpoint)
        return cls(sdk, owned=True)

    def tracer(self) -> Tracer:
        return self.provider.get_tracer(TRACER_NAME)

    def stop(self) -> None:
        """Sends the spans still queued and stops the exporter (a provider we built only).
        A collector that does not answer holds this for the exporter's timeout
        (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s)."""
        if not self.owned:
            return
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

        if isinstance(self.provider, SdkTracerProvider):
            self.provider.shutdown()
