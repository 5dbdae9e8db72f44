"""The totals of a bulk import, added up from the server's answers."""

from __future__ import annotations

from contextwm_client._types import ImportFailure, ImportResult
from contextwm_client.v1 import contextwm_pb2 as pb

# The totals of an import before the server has answered any chunk.
NO_IMPORT = ImportResult(
    appended=0, duplicates=0, conversations=0, evicted=0, failed=0, failures=()
)
# Failures an ImportResult lists; more are only counted.
MAX_IMPORT_FAILURES = 1000


def add_import_response(total: ImportResult, message: pb.ImportResponse) -> ImportResult:
    """The totals of an import after the server's answer to one more chunk."""
    room = MAX_IMPORT_FAILURES - len(total.failures)
    failures = tuple(
        ImportFailure(f.index, f.source, f.code, f.message) for f in message.failures[:room]
    )
    return ImportResult(
        appended=total.appended + message.appended,
        duplicates=total.duplicates + message.duplicates,
        conversations=total.conversations + message.conversations,
        evicted=total.evicted + message.evicted,
        failed=total.failed + message.failed,
        failures=total.failures + failures,
        out_of_order=total.out_of_order + message.out_of_order,
    )
