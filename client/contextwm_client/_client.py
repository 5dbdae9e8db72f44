"""The synchronous client: typed methods over the generated ContextService stub.

This module is also the source of the asyncio client: scripts/gen_async_client rewrites it
into _aio.py (`def` to `async def`, calls to awaited calls, `Client` to `AsyncClient`, ...),
so the two cannot drift. Write code here that those rewrites turn into correct asyncio code;
a test regenerates _aio.py and fails on any difference.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc
from google.protobuf.message import Message

from contextwm_client import _credentials, _health, _requests
from contextwm_client._convert.agent_loop import (
    from_proto_active_context,
    from_proto_checkpoint,
    from_proto_compact_response,
    from_proto_list_checkpoints_response,
    from_proto_list_context_edits_response,
    from_proto_restore_checkpoint_response,
    from_proto_truncate_response,
    from_proto_usage,
)
from contextwm_client._convert.conversations import (
    from_proto_append_batch_response,
    from_proto_append_response,
    from_proto_conversation,
    from_proto_item,
    from_proto_list_conversations_response,
    from_proto_list_items_response,
    joined_batch_results,
)
from contextwm_client._convert.erasure import from_proto_erasure_receipt
from contextwm_client._convert.importing import NO_IMPORT, add_import_response
from contextwm_client._convert.keys import from_proto_api_key, from_proto_created_key
from contextwm_client._convert.reembedding import from_proto_reembed_progress
from contextwm_client._convert.retention import from_proto_apply_retention_response
from contextwm_client._convert.retrieval import (
    from_proto_enhanced_context,
    from_proto_search_response,
)
from contextwm_client._convert.stats import from_proto_get_stats_response
from contextwm_client._convert.workspace_files import (
    from_proto_edit_file_response,
    from_proto_file_chunk,
    from_proto_search_files_page,
    from_proto_session,
    from_proto_tool_check,
)
from contextwm_client._credentials import Tls
from contextwm_client._deprecation import renamed_argument, warn_renamed
from contextwm_client._exceptions import (
    ContextWMError,
    DeadlineExceededError,
    UnavailableError,
    map_rpc_error,
    with_details,
)
from contextwm_client._streams import EventStream, cancel
from contextwm_client._target import with_port
from contextwm_client._types import (
    ActiveContext,
    ActiveEntry,
    ApiKey,
    AppendBatchResult,
    AppendResult,
    CategoryOptions,
    Checkpoint,
    CompactResult,
    ContextEdit,
    Conversation,
    ConversationSettings,
    CreatedKey,
    EnhancedContext,
    ErasureReceipt,
    FileChunk,
    FileEdit,
    FileRef,
    FileSearchPage,
    ImportItem,
    ImportResult,
    Item,
    NewItem,
    Page,
    ReembedProgress,
    RestoredExport,
    RestoreResult,
    RetentionReport,
    SearchResult,
    Session,
    StatsResult,
    ToolCheck,
    TruncateResult,
    Usage,
)
from contextwm_client._vocabulary import (
    CaseMode,
    ChunkStrategy,
    Flag,
    ItemState,
    RetrievalMode,
    Role,
    ScrollDirection,
    TruncationStrategy,
)
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc

# A server that is up answers at once: only a longer wait for one is worth saying.
QUIET_WAIT_SECONDS = 1.0
# Items per AppendBatch call: the server's default limits.max_batch_items.
BATCH_SIZE = 1000

_Request = TypeVar("_Request", bound=Message)
_Response = TypeVar("_Response", bound=Message)


class _Default:
    """The type of _DEFAULT: "the client's timeout", where None means "no deadline"."""


_DEFAULT = _Default()


class Client:
    """A synchronous contextwm client over one gRPC channel.

    Use it as a context manager, or call `close()`, to release the channel. Every method
    raises a `ContextWMError` subclass when the call fails, never a raw `grpc.RpcError`.
    Datetimes without a timezone are taken as UTC; returned datetimes are UTC-aware.
    """

    def __init__(
        self,
        target: str,
        *,
        namespace: str = "default",
        timeout: float | None = 30.0,
        channel_options: Sequence[tuple[str, Any]] = (),
        credentials: grpc.ChannelCredentials | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        ready_timeout: float | None = None,
        on_wait: Callable[[str], None] | None = None,
        tls: Tls | None = None,
        api_key: str | None = None,
        call_metadata: Callable[[], Iterable[tuple[str, str]]] | None = None,
    ) -> None:
        """Opens a channel (lazily: nothing is sent before the first call).

        Args:
            target: "host:port" ("host" alone: port 50051), or "unix:/path/to.sock" for a
                Unix socket.
            namespace: Namespace of calls that do not name one.
            timeout: Deadline of each call in seconds; None waits forever.
            channel_options: gRPC channel arguments, e.g. ("grpc.max_receive_message_length", n).
            credentials: gRPC channel credentials of your own, for what `tls` does not
                cover; None (and no `tls`) opens an insecure channel.
            metadata: Metadata sent with every call.
            ready_timeout: Before its first call, the client waits up to this many seconds
                for a server that is starting or not up yet (see `wait_ready`), and then
                raises UnavailableError naming the address; None: no wait, the first call
                fails at once when the server is not ready.
            on_wait: Called with a one-line message when that wait lasts more than a
                second, e.g. to tell a person what the client is waiting for.
            tls: A TLS channel: the CA to trust, the client certificate to present (mutual
                TLS) and the server name to expect; its files are read here.
            api_key: Sent with every call as `authorization: Bearer <key>`; reading it from
                a file (and stripping its newline) is the caller's part.
            call_metadata: Called as each call starts, for metadata to send with that call
                only (after `metadata`): the W3C `traceparent` of the caller's current span,
                say, so that the server's span joins the caller's trace (docs/tracing.md).

        Raises:
            ValueError: An api_key that is empty or holds whitespace, an api_key beside an
                authorization entry of metadata, or both tls and credentials.
            OSError: A file of tls cannot be read.
        """
        # Checked before the channel opens, so that a refused client leaves nothing open.
        if tls is not None and credentials is not None:
            raise ValueError("give tls or credentials, not both")
        key_metadata = _credentials.api_key_metadata(api_key)
        header = _credentials.API_KEY_HEADER
        if key_metadata and any(k.lower() == header for k, _ in metadata):
            raise ValueError(f"give api_key or an {header!r} entry of metadata, not both")
        options = list(channel_options)
        if tls is not None:
            credentials = _credentials.channel_credentials(tls)
            options += _credentials.channel_options(tls)
        target = with_port(target)
        self.target = target
        """The address the channel connects to."""
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=options)
        self._stub = pb_grpc.ContextServiceStub(self._channel)
        self._health_watch = self._channel.unary_stream(
            _health.WATCH,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString,
        )
        self._namespace = namespace
        self._timeout = timeout
        # Every call sends these (the one place the API key joins them).
        self._metadata = (*metadata, *key_metadata)
        self._call_metadata = call_metadata
        self._ready_timeout = ready_timeout
        self._on_wait = on_wait
        self._waited = ready_timeout is None

    def close(self) -> None:
        """Closes the channel, cancelling calls in flight. Closing twice is harmless."""
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def wait_ready(self, timeout: float | None = None) -> None:
        """Waits until the server is ready for calls: its gRPC health service reports
        contextwm.v1.ContextService SERVING.

        A starting server listens before its model has loaded and refuses calls with
        UNAVAILABLE until then; a server not listening yet is waited for, and one that
        restarts meanwhile is watched again.

        Args:
            timeout: How long to wait in seconds; None uses the client's timeout (None there
                waits forever).

        Raises:
            DeadlineExceededError: The server was not ready in time.
            ContextWMError: The health service failed otherwise (UNIMPLEMENTED: not a
                contextwm server).
        """
        limit = self._timeout if timeout is None else timeout
        deadline = None if limit is None else time.monotonic() + limit
        request = _health.HealthCheckRequest(value=_health.READINESS)
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            # wait_for_ready: while nothing listens, the call waits rather than fails.
            statuses = self._health_watch(
                request, timeout=left, metadata=self._metadata_now(), wait_for_ready=True
            )
            try:
                for status in statuses:
                    if status.value == _health.SERVING:
                        return
            except grpc.RpcError as exc:
                error = map_rpc_error(exc)
                if not isinstance(error, UnavailableError):  # else the server went away
                    raise error from exc
            finally:
                _health.stop(statuses)

    def _wait_first(self) -> None:
        """Waits for the server before the first call, as the constructor's ready_timeout
        says."""
        limit = self._ready_timeout or 0.0
        try:
            self.wait_ready(timeout=min(limit, QUIET_WAIT_SECONDS))
        except DeadlineExceededError:
            try:
                if limit <= QUIET_WAIT_SECONDS:
                    raise
                if self._on_wait is not None:
                    self._on_wait(
                        f"waiting up to {limit:g} s for contextwm at {self.target} (starting,"
                        " or not up yet)"
                    )
                self.wait_ready(timeout=limit - QUIET_WAIT_SECONDS)
            except DeadlineExceededError:
                raise UnavailableError(
                    "UNAVAILABLE",
                    f"no contextwm ready at {self.target} after {limit:g} s: start one there"
                    " (`contextwm serve`), or connect to another address",
                ) from None
        self._waited = True

    def _ns(self, namespace: str | None) -> str:
        return self._namespace if namespace is None else namespace

    def _metadata_now(self) -> tuple[tuple[str, str], ...] | None:
        """The metadata of a call starting now: the client's, then call_metadata's."""
        if self._call_metadata is None:
            return self._metadata or None
        return (*self._metadata, *self._call_metadata()) or None

    def _invoke(
        self,
        rpc: grpc.UnaryUnaryMultiCallable[_Request, _Response]
        | grpc.StreamUnaryMultiCallable[_Request, _Response],
        request: Any,
        timeout: float | _Default | None = _DEFAULT,
    ) -> _Response:
        # The one place where gRPC errors become ContextWMError, for every method.
        if not self._waited:
            self._wait_first()
        try:
            return rpc(
                request,
                timeout=self._timeout if isinstance(timeout, _Default) else timeout,
                metadata=self._metadata_now(),
            )
        except grpc.RpcError as exc:
            raise map_rpc_error(exc) from exc

    # ------------------------------------------------------------ conversations

    def create_conversation(
        self,
        conversation_id: str,
        *,
        settings: ConversationSettings | None = None,
        namespace: str | None = None,
    ) -> Conversation:
        """Creates a conversation with explicit settings.

        Args:
            conversation_id: Client-chosen id, 1..200 characters without control characters.
            settings: Settings; None fields (or None) take the server defaults.
            namespace: Namespace; None uses the client's.

        Returns:
            The conversation with its effective settings.

        Raises:
            ValueError: A category or contributor type is not a known name, or a category is
                given twice (checked before the call).
            AlreadyExistsError: The conversation exists already.
            InvalidArgumentError: The id or a setting is invalid.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.create_conversation(self._ns(namespace), conversation_id, settings)
        response = self._invoke(self._stub.CreateConversation, request)
        return from_proto_conversation(response)

    def get_conversation(
        self, conversation_id: str, *, namespace: str | None = None
    ) -> Conversation:
        """Reads a conversation's effective settings and statistics.

        Args:
            conversation_id: The conversation.
            namespace: Namespace; None uses the client's.

        Returns:
            The conversation.

        Raises:
            NotFoundError: No such conversation.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.get_conversation(self._ns(namespace), conversation_id)
        response = self._invoke(self._stub.GetConversation, request)
        return from_proto_conversation(response)

    def list_conversations(
        self, *, page_size: int = 100, page_token: str = "", namespace: str | None = None
    ) -> Page[Conversation]:
        """Lists one page of a namespace's conversations, ordered by id.

        Args:
            page_size: Conversations per page, 1..1000.
            page_token: The previous page's next_page_token; empty for the first page.
            namespace: Namespace; None uses the client's.

        Returns:
            The page; its next_page_token is empty on the last page.

        Raises:
            InvalidArgumentError: Bad page size or token.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.list_conversations(self._ns(namespace), page_size, page_token)
        response = self._invoke(self._stub.ListConversations, request)
        return from_proto_list_conversations_response(response)

    def iter_conversations(self, *, namespace: str | None = None) -> Iterator[Conversation]:
        """Iterates over all conversations of a namespace, fetching pages as needed.

        Args:
            namespace: Namespace; None uses the client's.

        Returns:
            An iterator of conversations ordered by id.

        Raises:
            ContextWMError: When fetching a page fails (raised during iteration).
        """
        page_token = ""
        while True:
            page = self.list_conversations(page_token=page_token, namespace=namespace)
            yield from page.entries
            if not page.next_page_token:
                return
            page_token = page.next_page_token

    def update_conversation(
        self,
        conversation_id: str,
        settings: ConversationSettings,
        *,
        namespace: str | None = None,
    ) -> Conversation:
        """Changes the settings that are not None; the rest stay as they were.

        Args:
            conversation_id: The conversation.
            settings: The settings to change.
            namespace: Namespace; None uses the client's.

        Returns:
            The conversation with its new effective settings.

        Raises:
            ValueError: A category or contributor type is not a known name, or a category is
                given twice (checked before the call).
            NotFoundError: No such conversation.
            InvalidArgumentError: A setting is invalid.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.update_conversation(self._ns(namespace), conversation_id, settings)
        response = self._invoke(self._stub.UpdateConversation, request)
        return from_proto_conversation(response)

    def delete_conversation(self, conversation_id: str, *, namespace: str | None = None) -> int:
        """Deletes a conversation with all its items and vectors.

        Args:
            conversation_id: The conversation.
            namespace: Namespace; None uses the client's.

        Returns:
            The number of items deleted (erase_conversation returns the receipt).

        Raises:
            NotFoundError: No such conversation.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.delete_conversation(self._ns(namespace), conversation_id)
        response = self._invoke(self._stub.DeleteConversation, request)
        return response.deleted_items

    def erase_conversation(
        self, conversation_id: str, *, namespace: str | None = None
    ) -> ErasureReceipt:
        """Deletes a conversation with all its items and vectors, as delete_conversation
        does, and returns the receipt of what went.

        Args:
            conversation_id: The conversation.
            namespace: Namespace; None uses the client's.

        Returns:
            The receipt: the items deleted (as seq ranges), counts per place and the digest
            of the deleted items.

        Raises:
            NotFoundError: No such conversation.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.delete_conversation(self._ns(namespace), conversation_id)
        response = self._invoke(self._stub.DeleteConversation, request)
        return from_proto_erasure_receipt(response.receipt)

    def forget(
        self,
        conversation_id: str | None = None,
        *,
        metadata: Mapping[str, str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        namespace: str | None = None,
    ) -> ErasureReceipt:
        """Erases for good the items that match, in any state, with everything derived
        from them: vectors, words in the indexes, facts, and compaction summaries that
        quote them (see docs/security.md, "Erasure").

        Args:
            conversation_id: One conversation; None: every conversation of the namespace.
            metadata: Items whose metadata has every one of these pairs, exactly.
            since: Items with a timestamp at or after this (naive: UTC).
            until: Items with a timestamp before this (naive: UTC).
            namespace: Namespace; None uses the client's.

        Returns:
            The receipt: the conversations and seqs erased, counts per place, and the
            digest of the erased items.

        Raises:
            ValueError: No criterion at all (checked before the call: to remove a whole
                conversation, delete it).
            NotFoundError: No such conversation.
            InvalidArgumentError: since not before until, or a bad name.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.forget(
            self._ns(namespace), conversation_id or "", metadata, since, until
        )
        response = self._invoke(self._stub.Forget, request)
        return from_proto_erasure_receipt(response)

    # ------------------------------------------------------------ items

    def append(
        self,
        conversation_id: str,
        content: str,
        *,
        role: Role = "user",
        timestamp: datetime | None = None,
        flags: Sequence[Flag] = (),
        metadata: Mapping[str, str] | None = None,
        file: FileRef | None = None,
        idempotency_key: str | None = None,
        namespace: str | None = None,
    ) -> AppendResult:
        """Appends one item; creates the conversation with defaults if it does not exist.

        Args:
            conversation_id: The conversation.
            content: The item's text.
            role: One of user, assistant, system, tool, file, error.
            timestamp: Event time for historic data; server time when None. Naive means UTC.
            flags: Importance flags: pinned (alias user_starred), error, code, question, solution.
            metadata: String pairs returned unchanged wherever the item appears.
            file: The file the item refers to.
            idempotency_key: A retry with the same key returns the first result (duplicate=True).
            namespace: Namespace; None uses the client's.

        Returns:
            The item's seq, tokens and effective flags, the evicted seqs and the window.

        Raises:
            InvalidArgumentError: Bad role, flag, file kind or content.
            ContextWMError: Any other failure of the call.
        """
        item = NewItem(
            content=content,
            role=role,
            timestamp=timestamp,
            flags=tuple(flags),
            metadata=dict(metadata or {}),
            file=file,
            idempotency_key=idempotency_key,
        )
        request = _requests.append(self._ns(namespace), conversation_id, item)
        response = self._invoke(self._stub.Append, request)
        return from_proto_append_response(response)

    def append_batch(
        self,
        conversation_id: str,
        items: Sequence[NewItem | Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int = BATCH_SIZE,
    ) -> AppendBatchResult:
        """Appends a batch of items (the AppendBatch call), all or nothing per call.

        Up to batch_size items go in one call, which appends them all or none. A longer
        batch is sent as calls of batch_size items each, in order: each call is all or
        nothing on its own, so when one fails the calls before it stay appended (the error
        says how many items that is) and nothing after it is sent. Give the items
        idempotency keys to make sending the whole batch again safe.

        Args:
            conversation_id: The conversation (created with defaults if missing).
            items: The items, in order: `NewItem`s, or dicts of NewItem's fields such as
                `{"role": "user", "content": "..."}` (the shape `as_message()` returns).
            namespace: Namespace; None uses the client's.
            batch_size: Items per call, 1.. the server's limits.max_batch_items (1000 by
                default, this default); lower it for a server with a lower limit.

        Returns:
            One result per item in order, the evicted seqs (of every call) and the window
            after the last call.

        Raises:
            ValueError: batch_size is below 1 (before any call).
            TypeError: An item is neither a NewItem nor such a dict (checked before any call;
                the message names its index and type).
            InvalidArgumentError: An item is invalid; nothing of its call was appended.
            ContextWMError: Any other failure of a call; after the first call, the message
                says how many items earlier calls appended.
        """
        requests = _requests.append_batches(self._ns(namespace), conversation_id, items, batch_size)
        results: list[AppendBatchResult] = []
        for request in requests:
            try:
                response = self._invoke(self._stub.AppendBatch, request)
            except ContextWMError as exc:
                if not results:
                    raise
                appended = sum(len(r.results) for r in results)
                raise with_details(
                    exc,
                    f"{exc.details} (the first {appended} items of the batch were appended by"
                    f" earlier calls of {batch_size}; none after them)",
                ) from exc
            results.append(from_proto_append_batch_response(response))
        return joined_batch_results(results)

    def append_many(
        self,
        conversation_id: str,
        items: Sequence[NewItem | Mapping[str, Any]],
        *,
        namespace: str | None = None,
    ) -> AppendBatchResult:
        """Deprecated name of `append_batch`, kept for one release: warns, then calls it.

        Arguments, result and errors are `append_batch`'s.
        """
        warn_renamed("Client.append_many", "Client.append_batch")
        return self.append_batch(conversation_id, items, namespace=namespace)

    def import_items(
        self,
        items: Iterable[ImportItem],
        *,
        chunk_size: int = 256,
        timeout: float | None = None,
        namespace: str | None = None,
        on_progress: Callable[[ImportResult], None] | None = None,
    ) -> ImportResult:
        """Bulk import (the Import call): streams items of any conversations in chunks.

        Items keep their own timestamps, and each conversation ends as live appends of its
        items in the same order would leave it. The server takes a chunk only when it is
        ready for it, so a fast iterator waits rather than filling memory. An item the server
        refuses is listed in the result and the rest goes on; an item whose idempotency_key
        is stored already is counted as a duplicate, so re-sending an import is safe.

        Args:
            items: The items, each conversation's in order.
            chunk_size: Items per request of the stream, 1..1000 (the server's
                limits.max_batch_items); larger chunks embed more efficiently.
            timeout: Deadline of the whole import in seconds; None (the default) has none,
                since an import may take hours: the client's timeout does not apply.
            namespace: Namespace of items that name none; None uses the client's.
            on_progress: Called with the totals so far each time the server has stored a
                chunk (the server answers chunks in order): what it reports is what the
                server holds. It runs on the calling thread, while the items are read on
                another one.

        Returns:
            How many items were appended, were duplicates or failed, and the failures.

        Raises:
            ValueError: chunk_size is out of range (before any call).
            InvalidArgumentError: A whole chunk is refused (over limits.max_batch_bytes);
                earlier chunks are stored.
            ContextWMError: Any other failure of the call; what the server took before it
                is stored, and re-sending the import adds it once.
        """
        if not 1 <= chunk_size <= 1000:
            raise ValueError(f"chunk_size must be 1..1000, not {chunk_size}")
        requests = _requests.import_chunks(self._ns(namespace), items, chunk_size)
        if not self._waited:
            self._wait_first()
        call = self._stub.Import(requests, timeout=timeout, metadata=self._metadata_now())
        result = NO_IMPORT
        try:
            for message in call:
                result = add_import_response(result, message)
                if on_progress is not None:
                    on_progress(result)
        except grpc.RpcError as exc:
            raise map_rpc_error(exc) from exc
        finally:
            cancel(call)  # an import left early (on_progress raised) stops on the server too
        return result

    def export(
        self,
        conversation_id: str | None = None,
        *,
        timeout: float | None = None,
        namespace: str | None = None,
    ) -> Iterator[str]:
        """Exports one conversation, or every conversation of the namespace, as the lines of
        a JSON Lines file (docs/export.md) that `restore_export` writes back exactly: settings,
        items with their states, pins, metadata and files, compactions with their summaries,
        checkpoints, context edits, events and sessions. Vectors are not exported.

        Args:
            conversation_id: One conversation; None: every conversation of the namespace.
            timeout: Deadline of the whole export in seconds; None (the default) has none:
                the client's timeout does not apply.
            namespace: Namespace; None uses the client's.

        Yields:
            The lines, without their newlines, as the server streams them.

        Raises:
            NotFoundError: No such conversation (raised during iteration).
            ContextWMError: Any other failure of the call (raised during iteration).
        """
        request = _requests.export(self._ns(namespace), conversation_id or "")
        if not self._waited:
            self._wait_first()
        call = self._stub.Export(request, timeout=timeout, metadata=self._metadata_now())
        try:
            for chunk in call:
                yield from chunk.lines
        except grpc.RpcError as exc:
            raise map_rpc_error(exc) from exc
        finally:
            cancel(call)  # an export left early stops on the server too

    def restore_export(
        self,
        lines: Iterable[str],
        *,
        timeout: float | None = None,
        namespace: str | None = None,
    ) -> RestoredExport:
        """Restores the conversations of an export (the lines `export` gave, or a file's).

        Each conversation is written whole, in one transaction, or not at all. One stored
        already with exactly the exported rows is counted as unchanged, so a restore that
        was cut off is resumed by calling again with the same lines. The server embeds the
        items again, with its own model.

        Args:
            lines: The export's lines (a trailing newline is dropped).
            timeout: Deadline of the whole restore in seconds; None (the default) has none.
            namespace: Restore every conversation into this namespace; None keeps each
                conversation's own (unlike other calls, not the client's namespace).

        Returns:
            How many conversations were restored or found unchanged, and their items.

        Raises:
            InvalidArgumentError: A line is not part of an export (the message names it), or
                a conversation was cut short or changed after the export.
            AlreadyExistsError: A conversation of that id exists with other contents.
            ContextWMError: Any other failure; conversations restored before it stay.
        """
        requests = _requests.restore_chunks(namespace or "", lines)
        answer = self._invoke(self._stub.RestoreExport, requests, timeout)
        return RestoredExport(answer.restored, answer.unchanged, answer.items)

    def pin(self, conversation_id: str, seq: int, *, namespace: str | None = None) -> Item:
        """Pins an item: it is evicted only when nothing else is left.

        Args:
            conversation_id: The conversation.
            seq: The item's seq.
            namespace: Namespace; None uses the client's.

        Returns:
            The item with its flags after the change.

        Raises:
            NotFoundError: No such conversation or item.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.pin(self._ns(namespace), conversation_id, seq)
        return from_proto_item(self._invoke(self._stub.Pin, request))

    def unpin(self, conversation_id: str, seq: int, *, namespace: str | None = None) -> Item:
        """Clears an item's pinned flag.

        Args:
            conversation_id: The conversation.
            seq: The item's seq.
            namespace: Namespace; None uses the client's.

        Returns:
            The item with its flags after the change.

        Raises:
            NotFoundError: No such conversation or item.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.pin(self._ns(namespace), conversation_id, seq)
        return from_proto_item(self._invoke(self._stub.Unpin, request))

    def list_items(
        self,
        conversation_id: str,
        *,
        page_size: int = 100,
        page_token: str = "",
        states: Sequence[ItemState] = (),
        namespace: str | None = None,
    ) -> Page[Item]:
        """Lists one page of a conversation's items in seq order.

        Args:
            conversation_id: The conversation.
            page_size: Items per page, 1..1000.
            page_token: The previous page's next_page_token; empty for the first page.
            states: Only items in these states (window, archived, compacted, reverted); all
                when empty.
            namespace: Namespace; None uses the client's.

        Returns:
            The page; its next_page_token is empty on the last page.

        Raises:
            ValueError: A state name is unknown (checked before the call).
            NotFoundError: No such conversation.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.list_items(
            self._ns(namespace), conversation_id, page_size, page_token, states
        )
        response = self._invoke(self._stub.ListItems, request)
        return from_proto_list_items_response(response)

    def iter_items(
        self,
        conversation_id: str,
        *,
        states: Sequence[ItemState] = (),
        namespace: str | None = None,
    ) -> Iterator[Item]:
        """Iterates over a conversation's items in seq order, fetching pages as needed.

        Args:
            conversation_id: The conversation.
            states: Only items in these states; all when empty.
            namespace: Namespace; None uses the client's.

        Returns:
            An iterator of items.

        Raises:
            ValueError: A state name is unknown (raised during iteration).
            ContextWMError: When fetching a page fails (raised during iteration).
        """
        page_token = ""
        while True:
            page = self.list_items(
                conversation_id, page_token=page_token, states=states, namespace=namespace
            )
            yield from page.entries
            if not page.next_page_token:
                return
            page_token = page.next_page_token

    # ------------------------------------------------------------ retrieval

    def get_context(
        self,
        conversation_id: str,
        query: str | None = None,
        *,
        max_tokens: int,
        recent_share: float | None = None,
        similarity_threshold: float | None = None,
        max_history_items: int | None = None,
        include_neighbors: bool | None = None,
        mode: RetrievalMode | None = None,
        time_hints: bool | None = None,
        categories: CategoryOptions | bool | None = None,
        as_of: datetime | None = None,
        namespace: str | None = None,
    ) -> EnhancedContext:
        """Returns the enhanced context: recent window plus relevant history, within a budget.

        Options left None take the server defaults.

        Args:
            conversation_id: The conversation.
            query: The question to answer; None lets the conversation's focus stand in.
            max_tokens: Token budget of the whole rendered text (> 0).
            recent_share: None (the default) lets relevance share the budget between window
                and history; 0..1 gives the window that fixed share of the budget.
            similarity_threshold: A similarity floor for candidates without lexical evidence
                (every candidate in dense mode).
            max_history_items: Upper bound on ranked items.
            include_neighbors: Offer a hit's question or answer turn as a candidate too.
            mode: "hybrid", "dense" or "lexical".
            time_hints: Read time words in the query ("last week", "in May").
            categories: Assemble by category budgets, with contributors and an allocation
                report: True with the conversation's budgets and weights, CategoryOptions
                to change them for this request; None or False: the recent/history split.
            as_of: When the query is asked (naive means UTC): time words in it are read
                against this moment; None uses the conversation's newest item time.
            namespace: Namespace; None uses the client's.

        Returns:
            The rendered text with the items, scores and token account behind it (and the
            allocation, with categories).

        Raises:
            ValueError: mode, a category or a contributor type is not a known name, or a
                category is given twice (checked before the call).
            NotFoundError: No such conversation.
            PermissionDeniedError: A file of the categories leaves the workspace.
            InvalidArgumentError: Bad budget or option.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.get_context(
            self._ns(namespace),
            conversation_id,
            query,
            max_tokens=max_tokens,
            recent_share=recent_share,
            similarity_threshold=similarity_threshold,
            max_history_items=max_history_items,
            include_neighbors=include_neighbors,
            mode=mode,
            time_hints=time_hints,
            categories=categories,
            as_of=as_of,
        )
        response = self._invoke(self._stub.GetContext, request)
        return from_proto_enhanced_context(response)

    def search(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        top_k: int = 10,
        include_window: bool = False,
        roles: Sequence[Role] = (),
        flags: Sequence[Flag] = (),
        since: datetime | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, str] | None = None,
        mode: RetrievalMode | None = None,
        similarity_threshold: float | None = None,
        as_of: datetime | None = None,
        time_hints: bool | None = None,
        namespace: str | None = None,
    ) -> SearchResult:
        """Searches one conversation's archive (and optionally window), or a whole namespace.

        Args:
            query: The search text.
            conversation_id: The conversation; None searches every conversation of the namespace.
            top_k: Hits to return, 1..1000.
            include_window: Search the window too, not only the archive.
            roles: Only items with one of these roles.
            flags: Only items carrying all of these flags.
            since: Only items at or after this time (naive means UTC).
            until: Only items before this time (naive means UTC).
            metadata: Only items whose metadata has each of these pairs.
            mode: "hybrid", "dense" or "lexical"; None is the server default.
            similarity_threshold: Minimum cosine similarity of dense-only hits.
            as_of: When the query is asked (naive means UTC), for its time words.
            time_hints: Read time words in the query ("last week", "in May"); None is the
                server default (true).
            namespace: Namespace; None uses the client's.

        Returns:
            The hits, best first, and the time range read from the query.

        Raises:
            ValueError: mode is not a known retrieval mode (checked before the call).
            NotFoundError: No such conversation.
            InvalidArgumentError: Bad top_k or filter.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.search(
            self._ns(namespace),
            query,
            conversation_id=conversation_id,
            top_k=top_k,
            include_window=include_window,
            roles=roles,
            flags=flags,
            since=since,
            until=until,
            metadata=metadata,
            mode=mode,
            similarity_threshold=similarity_threshold,
            as_of=as_of,
            time_hints=time_hints,
        )
        response = self._invoke(self._stub.Search, request)
        return from_proto_search_response(response)

    # ------------------------------------------------------------ agent loop

    def get_usage(
        self,
        conversation_id: str,
        *,
        reported_input_tokens: int | None = None,
        reported_cache_read_input_tokens: int = 0,
        namespace: str | None = None,
        reported_cache_read_tokens: int | None = None,
    ) -> Usage:
        """Returns the active context's size against the model's limit.

        Call it before each LLM request. When `should_compact` is set, send `summary_request`
        to the LLM and pass its answer to `compact`.

        Args:
            conversation_id: The conversation.
            reported_input_tokens: The provider's input-token count of the last response;
                None sends no report. The server keeps it until the active context shrinks.
            reported_cache_read_input_tokens: The provider's cache-read input tokens of the same
                response (sent with reported_input_tokens only).
            namespace: Namespace; None uses the client's.
            reported_cache_read_tokens: Deprecated name of reported_cache_read_input_tokens,
                kept for one release (warns).

        Returns:
            The usage, with the summary request when it is time to compact.

        Raises:
            TypeError: Both names of the cache-read count are given.
            ValueError: A cache-read count without reported_input_tokens (checked before the
                call).
            NotFoundError: No such conversation.
            InvalidArgumentError: A negative count.
            ContextWMError: Any other failure of the call.
        """
        cache_read_input_tokens = renamed_argument(
            "reported_cache_read_tokens",
            reported_cache_read_tokens,
            "reported_cache_read_input_tokens",
            reported_cache_read_input_tokens,
            default=0,
        )
        request = _requests.get_usage(
            self._ns(namespace), conversation_id, reported_input_tokens, cache_read_input_tokens
        )
        return from_proto_usage(self._invoke(self._stub.GetUsage, request))

    def get_active_context(
        self,
        conversation_id: str,
        *,
        page_size: int = 100,
        page_token: str = "",
        namespace: str | None = None,
    ) -> ActiveContext:
        """Returns one page of the active context: what the agent sends its LLM.

        The active context is the items after the last compaction (its marker first), with
        truncation notices and placeholders for masked tool outputs and superseded reads.

        Args:
            conversation_id: The conversation.
            page_size: Entries per page, 1..1000.
            page_token: The previous page's next_page_token; empty for the first page.
            namespace: Namespace; None uses the client's.

        Returns:
            The page, with the whole active context's entry and token totals and the usage.

        Raises:
            NotFoundError: No such conversation.
            InvalidArgumentError: Bad page size or token.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.get_active_context(
            self._ns(namespace), conversation_id, page_size, page_token
        )
        response = self._invoke(self._stub.GetActiveContext, request)
        return from_proto_active_context(response)

    def iter_active_context(
        self, conversation_id: str, *, page_size: int = 500, namespace: str | None = None
    ) -> Iterator[ActiveEntry]:
        """Iterates over the whole active context, fetching pages as needed.

        `[entry.as_message() for entry in client.iter_active_context(cid)]` is the message
        list to send to the LLM.

        Args:
            conversation_id: The conversation.
            page_size: Entries per page, 1..1000.
            namespace: Namespace; None uses the client's.

        Returns:
            An iterator of entries, in order.

        Raises:
            ContextWMError: When fetching a page fails (raised during iteration).
        """
        page_token = ""
        while True:
            page = self.get_active_context(
                conversation_id, page_size=page_size, page_token=page_token, namespace=namespace
            )
            yield from page.entries
            if not page.next_page_token:
                return
            page_token = page.next_page_token

    def compact(
        self, conversation_id: str, summary: str | None = None, *, namespace: str | None = None
    ) -> CompactResult:
        """Records a compaction: a marker with the summary starts the new active context.

        Earlier items stay stored, listed (state "compacted") and searchable.

        Args:
            conversation_id: The conversation.
            summary: The summary the agent's LLM wrote in answer to `Usage.summary_request`;
                None lets the server write an extractive summary. A blank string is refused.
            namespace: Namespace; None uses the client's.

        Returns:
            The compaction and the usage after it.

        Raises:
            NotFoundError: No such conversation.
            InvalidArgumentError: The summary is blank.
            FailedPreconditionError: The compaction would not make the active context smaller
                or would leave it over the threshold.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.compact(self._ns(namespace), conversation_id, summary)
        response = self._invoke(self._stub.Compact, request)
        return from_proto_compact_response(response)

    def truncate(
        self, conversation_id: str, strategy: TruncationStrategy, *, namespace: str | None = None
    ) -> TruncateResult:
        """Removes items from the active context by a strategy; they are archived, not deleted.

        The first user/assistant pair is kept, and a notice takes the removed items' place.

        Args:
            conversation_id: The conversation.
            strategy: What to keep after the first pair: "none", "last_two", "half" or
                "quarter".
            namespace: Namespace; None uses the client's.

        Returns:
            The truncated seqs, the tokens removed and the usage after it.

        Raises:
            NotFoundError: No such conversation.
            InvalidArgumentError: Unknown strategy.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.truncate(self._ns(namespace), conversation_id, strategy)
        response = self._invoke(self._stub.Truncate, request)
        return from_proto_truncate_response(response)

    def create_checkpoint(
        self, conversation_id: str, name: str, *, namespace: str | None = None
    ) -> Checkpoint:
        """Creates a named checkpoint of the conversation's window, archive and active context.

        Args:
            conversation_id: The conversation.
            name: 1..128 characters without control characters, unique per conversation.
            namespace: Namespace; None uses the client's.

        Returns:
            The checkpoint.

        Raises:
            NotFoundError: No such conversation.
            AlreadyExistsError: The name is in use.
            InvalidArgumentError: Bad name.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.create_checkpoint(self._ns(namespace), conversation_id, name)
        response = self._invoke(self._stub.CreateCheckpoint, request)
        return from_proto_checkpoint(response)

    def list_checkpoints(
        self, conversation_id: str, *, namespace: str | None = None
    ) -> list[Checkpoint]:
        """Lists a conversation's checkpoints.

        Args:
            conversation_id: The conversation.
            namespace: Namespace; None uses the client's.

        Returns:
            The checkpoints, oldest first.

        Raises:
            NotFoundError: No such conversation.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.list_checkpoints(self._ns(namespace), conversation_id)
        response = self._invoke(self._stub.ListCheckpoints, request)
        return from_proto_list_checkpoints_response(response)

    def restore_checkpoint(
        self, conversation_id: str, name: str, *, namespace: str | None = None
    ) -> RestoreResult:
        """Returns window, archive, active context and usage to a checkpoint.

        Items added after the checkpoint are kept but marked reverted; context edits made
        after it are undone (and stay in the context history).

        Args:
            conversation_id: The conversation.
            name: The checkpoint's name.
            namespace: Namespace; None uses the client's.

        Returns:
            The checkpoint, the reverted items and undone edits, and the usage after it.

        Raises:
            NotFoundError: No such conversation or checkpoint.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.restore_checkpoint(self._ns(namespace), conversation_id, name)
        response = self._invoke(self._stub.RestoreCheckpoint, request)
        return from_proto_restore_checkpoint_response(response)

    def list_context_edits(
        self,
        conversation_id: str,
        *,
        page_size: int = 100,
        page_token: str = "",
        namespace: str | None = None,
    ) -> Page[ContextEdit]:
        """Lists one page of the conversation's context history of edits.

        Edits are compactions, truncations and duplicate-read replacements, including those
        a restore undid.

        Args:
            conversation_id: The conversation.
            page_size: Edits per page, 1..1000.
            page_token: The previous page's next_page_token; empty for the first page.
            namespace: Namespace; None uses the client's.

        Returns:
            The page; its next_page_token is empty on the last page.

        Raises:
            NotFoundError: No such conversation.
            InvalidArgumentError: Bad page size or token.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.list_context_edits(
            self._ns(namespace), conversation_id, page_size, page_token
        )
        response = self._invoke(self._stub.ListContextEdits, request)
        return from_proto_list_context_edits_response(response)

    def iter_context_edits(
        self, conversation_id: str, *, page_size: int = 500, namespace: str | None = None
    ) -> Iterator[ContextEdit]:
        """Iterates over the conversation's whole context history, fetching pages as needed.

        Args:
            conversation_id: The conversation.
            page_size: Edits per page, 1..1000.
            namespace: Namespace; None uses the client's.

        Returns:
            An iterator of context edits, in the server's order.

        Raises:
            ContextWMError: When fetching a page fails (raised during iteration).
        """
        page_token = ""
        while True:
            page = self.list_context_edits(
                conversation_id, page_size=page_size, page_token=page_token, namespace=namespace
            )
            yield from page.entries
            if not page.next_page_token:
                return
            page_token = page.next_page_token

    # ------------------------------------------------------------ operations

    def apply_retention(
        self,
        conversation_id: str | None = None,
        *,
        dry_run: bool = False,
        every_namespace: bool = False,
        namespace: str | None = None,
    ) -> RetentionReport:
        """Applies the retention policies now (the server also does so periodically).

        Removes archived items older than a policy's maximum age or beyond its maximum
        count, and whole conversations inactive for longer than it allows. Window items,
        the active context and what a checkpoint restore would bring back stay.

        Args:
            conversation_id: One conversation; None: every conversation of the namespace.
            dry_run: Remove nothing; report what a run now would remove.
            every_namespace: Every conversation of every namespace (give neither
                conversation_id nor namespace).
            namespace: Namespace; None uses the client's.

        Returns:
            Per conversation that lost items or went whole, what it lost and why.

        Raises:
            NotFoundError: No such conversation.
            InvalidArgumentError: every_namespace with a conversation or namespace, or a bad
                name.
            ContextWMError: Any other failure of the call.
        """
        scope = "" if every_namespace and namespace is None else self._ns(namespace)
        request = _requests.apply_retention(scope, conversation_id or "", every_namespace, dry_run)
        response = self._invoke(self._stub.ApplyRetention, request)
        return from_proto_apply_retention_response(response)

    def watch(
        self,
        conversation_id: str,
        *,
        after_event_id: int = 0,
        timeout: float | None = None,
        namespace: str | None = None,
    ) -> EventStream:
        """Streams a conversation's events as they happen, until cancelled.

        Returns the stream at once, to be used as in
        `with client.watch(cid) as events: for event in events: ...`.

        The server first replays the kept events after after_event_id (one hour by default),
        then streams new ones. Unlike the other methods, a watch has no deadline unless one
        is given: the client's timeout does not apply.

        Args:
            conversation_id: The conversation.
            after_event_id: Replay the kept events after this id first; 0 replays all kept
                events. Pass `EventStream.last_event_id` to resume a broken watch.
            timeout: Deadline of the whole stream in seconds; None runs until cancelled.
            namespace: Namespace; None uses the client's.

        Returns:
            The stream of `Event`s: iterating over it gives them, in order.
            Use it as a context manager or call `cancel()` to stop it.
            A "gap" event says how many events retention dropped.

        Raises:
            NotFoundError: No such conversation (raised during iteration).
            ContextWMError: Any other failure of the stream (raised during iteration).
        """
        request = _requests.watch(self._ns(namespace), conversation_id, after_event_id)
        try:
            call = self._stub.Watch(request, timeout=timeout, metadata=self._metadata_now())
        except grpc.RpcError as exc:  # the call fails on reading, but be sure
            raise map_rpc_error(exc) from exc
        return EventStream(call, after_event_id)

    # ------------------------------------------------------------ statistics

    def get_stats(
        self,
        conversation_id: str | None = None,
        *,
        all_namespaces: bool = False,
        page_size: int = 100,
        page_token: str = "",
        namespace: str | None = None,
    ) -> StatsResult:
        """Reads what the store holds: items and tokens by state, vectors, index bytes and
        item times, per conversation (one page) and in total for the scope.

        The scope is one conversation, the namespace's conversations, or every namespace's.
        Every page carries the totals of the whole scope.

        Args:
            conversation_id: One conversation of the namespace; None for all of them.
            all_namespaces: Every namespace's conversations, ordered by namespace, then id.
            page_size: Conversations per page, 1..1000.
            page_token: The previous page's next_page_token; empty for the first page.
            namespace: Namespace; None uses the client's (none with all_namespaces).

        Returns:
            The page of conversations and the scope's totals.

        Raises:
            NotFoundError: conversation_id names no conversation.
            InvalidArgumentError: Bad page size or token, or all_namespaces with a
                conversation_id or a namespace.
            ContextWMError: Any other failure of the call.
        """
        # Across namespaces the client's own namespace is not sent: the scope names none.
        ns = "" if all_namespaces and namespace is None else self._ns(namespace)
        request = _requests.get_stats(
            ns, conversation_id or "", all_namespaces, page_size, page_token
        )
        return from_proto_get_stats_response(self._invoke(self._stub.GetStats, request))

    # ------------------------------------------------------------ workspace files

    def read_file_chunk(
        self,
        conversation_id: str,
        path: str,
        *,
        chunk_index: int | None = None,
        line: int | None = None,
        text: str | None = None,
        strategy: ChunkStrategy | None = None,
        max_lines: int = 0,
        max_tokens: int = 0,
        record: bool = True,
        namespace: str | None = None,
    ) -> FileChunk:
        """Reads one chunk of a file of the conversation's workspace.

        The conversation then views that file (see `scroll_file`), and the read is recorded
        as a file item of the conversation, so that duplicate reads and working files see
        it, unless record is False.

        Args:
            conversation_id: The conversation (its workspace, its encoding, its view).
            path: Relative to the workspace, or absolute inside it.
            chunk_index: Which chunk, from 0. Give at most one of chunk_index, line, text;
                none reads the first chunk.
            line: The chunk holding this line (1-based).
            text: The chunk holding the first occurrence of this text.
            strategy: "lines", "functions" or "semantic"; None: the server's default.
            max_lines: Lines per chunk; 0: the server's default (100).
            max_tokens: Size chunks in tokens instead: each has at most this many.
            record: Record the read as an item of the conversation.
            namespace: Namespace; None uses the client's.

        Returns:
            The chunk, with where it is in the file and how it was cut.

        Raises:
            PermissionDeniedError: The path leaves the workspace.
            NotFoundError: No such conversation, file, line or text.
            InvalidArgumentError: A binary file, a directory, or bad sizes.
            ResourceExhaustedError: A file over the server's size limit, or a line longer
                than max_tokens.
            FailedPreconditionError: The conversation has no workspace.
            ValueError: An unknown strategy, or more than one position (before any call).
            ContextWMError: Any other failure of the call.
        """
        request = _requests.read_file_chunk(
            self._ns(namespace),
            conversation_id,
            path,
            strategy,
            max_lines,
            max_tokens,
            chunk_index,
            line,
            text,
            record,
        )
        return from_proto_file_chunk(self._invoke(self._stub.ReadFileChunk, request))

    def scroll_file(
        self,
        conversation_id: str,
        direction: ScrollDirection | None = None,
        *,
        line: int | None = None,
        text: str | None = None,
        record: bool = True,
        namespace: str | None = None,
    ) -> FileChunk:
        """Moves through the file the conversation views, cut as its last read cut it.

        Args:
            conversation_id: The conversation.
            direction: "next" or "previous". Give exactly one of direction, line, text.
            line: The chunk holding this line (1-based).
            text: The chunk holding the next occurrence of this text (from the current
                chunk on, then from the top).
            record: Record the read as an item of the conversation.
            namespace: Namespace; None uses the client's.

        Returns:
            The chunk now viewed.

        Raises:
            FailedPreconditionError: The conversation views no file.
            InvalidArgumentError: No chunk that way (at the first or last one).
            NotFoundError: No such conversation, line or text, or the file is gone.
            ValueError: An unknown direction, or not exactly one move (before any call).
            ContextWMError: Any other failure of the call.
        """
        request = _requests.scroll_file(
            self._ns(namespace), conversation_id, direction, line, text, record
        )
        return from_proto_file_chunk(self._invoke(self._stub.ScrollFile, request))

    def search_files(
        self,
        conversation_id: str,
        pattern: str,
        *,
        regex: bool = False,
        case: CaseMode = "smart",
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        path: str = "",
        max_matches_per_file: int = 0,
        context_lines: int | None = None,
        page_size: int = 0,
        max_tokens: int = 0,
        page_token: str = "",
        namespace: str | None = None,
    ) -> FileSearchPage:
        """Searches the text files of the conversation's workspace, a page at a time.

        .gitignore is respected and binary files are skipped. To go on, call again with the
        same arguments and the page's next_page_token.

        Args:
            conversation_id: The conversation (its workspace and encoding).
            pattern: The text to find, or a regular expression (Python syntax) with regex.
            regex: Treat pattern as a regular expression.
            case: "smart" (insensitive unless pattern has an upper-case letter),
                "sensitive" or "insensitive".
            include: Gitignore-style globs a file must match (any of them).
            exclude: Globs of files to leave out.
            path: A directory or file to search in; "": the whole workspace.
            max_matches_per_file: Matching lines shown per file; 0: 20.
            context_lines: Lines around each match; None: the server's default (3).
            page_size: Matching lines per page; 0: 50.
            max_tokens: When given, a page's text has at most this many tokens.
            page_token: A page's next_page_token, to continue the same search.
            namespace: Namespace; None uses the client's.

        Returns:
            The page, with the matches and what remains after it.

        Raises:
            InvalidArgumentError: An empty pattern, a bad regular expression, or a page
                token of another search.
            PermissionDeniedError: path leaves the workspace.
            ResourceExhaustedError: Not even one matching line fits max_tokens.
            FailedPreconditionError: The conversation has no workspace.
            NotFoundError: No such conversation.
            ValueError: An unknown case mode (before any call).
            ContextWMError: Any other failure of the call.
        """
        request = _requests.search_files(
            self._ns(namespace),
            conversation_id,
            pattern,
            regex=regex,
            case=case,
            include=include,
            exclude=exclude,
            path=path,
            max_matches_per_file=max_matches_per_file,
            context_lines=context_lines,
            page_size=page_size,
            max_tokens=max_tokens,
            page_token=page_token,
        )
        return from_proto_search_files_page(self._invoke(self._stub.SearchFiles, request))

    def edit_file(
        self,
        conversation_id: str,
        path: str,
        search: str,
        replace: str,
        *,
        expected_sha256: str = "",
        namespace: str | None = None,
    ) -> FileEdit:
        """Replaces the one occurrence of search in a workspace file, atomically.

        Args:
            conversation_id: The conversation (its workspace).
            path: Relative to the workspace, or absolute inside it.
            search: Text that occurs exactly once in the file; bare line feeds also match
                the file's CRLF line endings.
            replace: What replaces it.
            expected_sha256: When given, the edit is refused unless the file still has this
                hash (a `FileChunk.sha256` from the read the edit is based on).
            namespace: Namespace; None uses the client's.

        Returns:
            Where the replacement is, and the file's hashes before and after.

        Raises:
            FailedPreconditionError: search is absent or occurs more than once (the message
                says where); the file is untouched.
            AbortedError: The file changed since it was read (expected_sha256).
            PermissionDeniedError: The path leaves the workspace.
            NotFoundError: No such conversation or file.
            InvalidArgumentError: An empty search, or a binary or non-UTF-8 file.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.edit_file(
            self._ns(namespace), conversation_id, path, search, replace, expected_sha256
        )
        return from_proto_edit_file_response(self._invoke(self._stub.EditFile, request))

    # ------------------------------------------------------------ tool availability

    def set_session_state(
        self,
        conversation_id: str,
        *,
        set: Sequence[str] = (),
        clear: Sequence[str] = (),
        clear_all: bool = False,
        namespace: str | None = None,
    ) -> Session:
        """Sets and clears states of the conversation's session, which decide its tools.

        Args:
            conversation_id: The conversation.
            set: States to set: "interactive_commands", "large_file_viewing",
                "search_active", or a custom state the server's configuration names.
            clear: States to clear.
            clear_all: Clear every state first.
            namespace: Namespace; None uses the client's.

        Returns:
            The session after the change, with the tools now available.

        Raises:
            InvalidArgumentError: A state the server does not know.
            NotFoundError: No such conversation.
            ValueError: A list given as one string (before any call).
            ContextWMError: Any other failure of the call.
        """
        request = _requests.set_session_state(
            self._ns(namespace), conversation_id, set, clear, clear_all
        )
        return from_proto_session(self._invoke(self._stub.SetSessionState, request))

    def get_session(self, conversation_id: str, *, namespace: str | None = None) -> Session:
        """The conversation's session: its states, the tools available, the file it views.

        Raises:
            NotFoundError: No such conversation.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.get_session(self._ns(namespace), conversation_id)
        return from_proto_session(self._invoke(self._stub.GetSession, request))

    def check_tool(
        self, conversation_id: str, tool: str, *, namespace: str | None = None
    ) -> ToolCheck:
        """Whether a tool is available to the conversation now, and if not, why.

        Raises:
            NotFoundError: No such conversation.
            InvalidArgumentError: An empty tool name.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.check_tool(self._ns(namespace), conversation_id, tool)
        return from_proto_tool_check(self._invoke(self._stub.CheckTool, request))

    # ------------------------------------------------------------ operations

    def reembed(
        self,
        conversation_id: str | None = None,
        *,
        all_namespaces: bool = False,
        timeout: float | None = None,
        namespace: str | None = None,
    ) -> Generator[ReembedProgress, None, None]:
        """Re-embeds stale conversations with the server's embedding model, reporting progress.

        A conversation is stale when its stored vectors come from another model than the
        server's (the server's embedding model changed): dense and hybrid search on it are
        refused with FailedPreconditionError until it is re-embedded. The server keeps serving
        meanwhile. To stop early, close the iterator: `iterator.close()`
        (an exception such as Ctrl-C while iterating closes it too). The call is cancelled,
        the server stops after the batch in hand, and a later call resumes where it stopped.
        Unlike the other methods, a re-embed has no deadline unless one is given: the
        client's timeout does not apply.

        Args:
            conversation_id: One conversation; None: every conversation of the namespace.
            all_namespaces: Every conversation of every namespace (then name neither a
                conversation nor a namespace).
            timeout: Deadline of the whole run in seconds; None runs until it is done.
            namespace: Namespace; None uses the client's.

        Returns:
            A generator of `ReembedProgress`: the plan first (nothing done yet),
            then a report after every batch and every conversation; the last one has
            `finished` set.

        Raises:
            NotFoundError: No such conversation (raised during iteration).
            FailedPreconditionError: Another re-embed is running (raised during iteration).
            InvalidArgumentError: all_namespaces with a conversation or namespace.
            UnavailableError: The server is shutting down: run it again once it is back.
            ContextWMError: Any other failure (raised during iteration).
        """
        ns = "" if all_namespaces and namespace is None else self._ns(namespace)
        request = _requests.reembed(ns, conversation_id, all_namespaces)
        if not self._waited:
            self._wait_first()
        call = self._stub.Reembed(request, timeout=timeout, metadata=self._metadata_now())
        try:
            for message in call:
                yield from_proto_reembed_progress(message)
        except grpc.RpcError as exc:
            raise map_rpc_error(exc) from exc
        finally:
            cancel(call)  # a run left early stops on the server too (no-op once it ended)

    def create_key(
        self,
        name: str,
        role: str,
        namespaces: Sequence[str],
        *,
        expires_at: datetime | None = None,
    ) -> CreatedKey:
        """Creates an API key (needs an admin key whose scope is "*", or a loopback server
        without keys).

        Args:
            name: A name for people (at most 200 characters).
            role: "read", "write" or "admin".
            namespaces: At least one: exact names, prefixes ending in "/", or "*".
            expires_at: When it stops working; None: never.

        Returns:
            The key and its token, which no call returns again: store it now.

        Raises:
            InvalidArgumentError: A bad role, scope, name or expiry.
            PermissionDeniedError: The client's key may not manage keys.
            ContextWMError: Any other failure of the call.
        """
        request = _requests.create_key(name, role, namespaces, expires_at)
        return from_proto_created_key(self._invoke(self._stub.CreateKey, request))

    def list_keys(self) -> list[ApiKey]:
        """Every API key, revoked ones too, oldest first; never their tokens.

        Raises:
            PermissionDeniedError: The client's key may not manage keys.
            ContextWMError: Any other failure of the call.
        """
        response = self._invoke(self._stub.ListKeys, pb.ListKeysRequest())
        return [from_proto_api_key(k) for k in response.keys]

    def revoke_key(self, key_id: str) -> ApiKey:
        """Revokes an API key: it stops working at once on every server sharing the store,
        open Watch streams included.

        Raises:
            NotFoundError: No key with this id.
            PermissionDeniedError: The client's key may not manage keys.
            ContextWMError: Any other failure of the call.
        """
        request = pb.RevokeKeyRequest(key_id=key_id)
        return from_proto_api_key(self._invoke(self._stub.RevokeKey, request))

    def rotate_key(self, key_id: str) -> CreatedKey:
        """Gives an API key a new token (same id, role, scope and expiry); the old token
        stops working at once.

        Returns:
            The key and its new token, which no call returns again: store it now.

        Raises:
            NotFoundError: No key with this id.
            FailedPreconditionError: The key is revoked or expired.
            PermissionDeniedError: The client's key may not manage keys.
            ContextWMError: Any other failure of the call.
        """
        request = pb.RotateKeyRequest(key_id=key_id)
        return from_proto_created_key(self._invoke(self._stub.RotateKey, request))
