"""Starting the inspector with the service: its address checked, a private socket for its
reads added to the gRPC server, its HTTP port bound (before the model loads, so that a port
in use is told at once), and, once the service is built, the reads it serves."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from contextwm.access.guard import Authenticator
from contextwm.exposure import Exposure, inspector_refusal
from contextwm.inspector.pages import Pages
from contextwm.inspector.reads import Reads
from contextwm.inspector.routes import Backend
from contextwm.inspector.web import Inspector
from contextwm.ports.retention_store import RetentionStore
from contextwm.ports.tokens import TokenCounter
from contextwm.settings import ServerSettings, SettingsError
from contextwm.tls_files import tls_configured
from contextwm.transport.server import GrpcServer

log = logging.getLogger(__name__)


def check_address(settings: ServerSettings) -> None:
    """Refuses an inspector address that the settings do not guard (none when it is off).

    Raises:
        SettingsError: the inspector must not be served there; the message says what to do.
    """
    if settings.inspector_port is None:
        return
    why = inspector_refusal(
        Exposure(
            host=settings.inspector_host,
            port=settings.inspector_port,
            api_keys=settings.require_api_keys,
            tls=tls_configured(settings),
            insecure=settings.insecure,
        )
    )
    if why is not None:
        raise SettingsError(why)


class InspectorListening:
    """The inspector bound, and the private socket its reads go through."""

    def __init__(self, settings: ServerSettings, server: GrpcServer) -> None:
        """Binds the private socket on server (before it starts) and the HTTP port; the
        address was checked by `check_address`.

        Raises:
            OSError: its port cannot be bound, or the TLS files cannot be used.
        """
        port = settings.inspector_port or 0
        # A directory only this user can enter: the socket's callers are this server's own.
        self._dir = Path(tempfile.mkdtemp(prefix="contextwm-inspector-"))
        try:
            self.address = f"unix:{self._dir / 'grpc.sock'}"
            server.bind(self.address)
            tls = (
                (settings.tls_cert_file, settings.tls_key_file)
                if tls_configured(settings)
                else None
            )
            self.inspector = Inspector(settings.inspector_host, port, tls)
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        self._required = settings.require_api_keys
        log.info("contextwm inspector at %s", self.inspector.url)

    @property
    def port(self) -> int:
        return self.inspector.port

    def serve(
        self,
        keys: Authenticator,
        store: RetentionStore,
        counters: Callable[[str], TokenCounter],
    ) -> None:
        """Answers pages from now on, reading through the private socket (and, for which
        conversations there are and when each was last active, the store); counters are the
        service's own, so that a replayed usage counts as the service did."""

        def activity(namespace: str | None) -> list[tuple[str, str, float]]:
            return [
                (a.record.namespace, a.record.conversation_id, a.last_active)
                for a in store.conversation_activity(namespace)
            ]

        reads = Reads(self.address)
        self.inspector.serve(Backend(Pages(reads, activity, counters), reads, keys, self._required))

    def stop(self) -> None:
        self.inspector.stop()
        shutil.rmtree(self._dir, ignore_errors=True)
