"""The Watch stream, sync and asyncio: events as `Event` values, cancellation as a normal end.

A watch runs until it is cancelled, so cancelling is how it ends, not a failure: after
`cancel()` iteration just stops. Every other gRPC error is mapped with `map_rpc_error`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from types import TracebackType
from typing import Protocol, Self

import grpc

from contextwm_client._convert.agent_loop import from_proto_event
from contextwm_client._exceptions import map_rpc_error
from contextwm_client._types import Event
from contextwm_client.v1 import contextwm_pb2 as pb


class _SyncStreamCall(Protocol):
    """What EventStream needs of grpc's sync response-streaming call."""

    def __iter__(self) -> Iterator[pb.Event]: ...

    def cancel(self) -> bool: ...


class _AsyncStreamCall(Protocol):
    """What AsyncEventStream needs of grpc.aio's response-streaming call."""

    async def read(self) -> object: ...

    def cancel(self) -> bool: ...


class _Cancellable(Protocol):
    """A sync or asyncio streaming call, as far as `cancel` needs it."""

    def cancel(self) -> bool: ...


def cancel(call: _Cancellable) -> None:
    """Cancels a streaming call, sync or asyncio (a no-op once it has ended); typed here
    because grpc's stubs leave the sync call's cancel untyped."""
    call.cancel()


class EventStream:
    """A conversation's events as they happen, from `Client.watch`.

    Iterate over it to receive `Event`s; iteration blocks until the next event and ends only
    when the stream is cancelled (or the server ends it). Use it as a context manager, or
    call `cancel()`, to stop it; `cancel()` may be called from another thread.

    Raises:
        ContextWMError: While iterating, for any failure other than this stream's cancel
            (NotFoundError for an unknown conversation, UnavailableError when the server
            goes away, ...). Resume with a new watch from `last_event_id`.
    """

    def __init__(self, call: _SyncStreamCall, after_event_id: int) -> None:
        self._call = call
        # grpc's call is its own iterator; iter() gives the typed view of it.
        self._messages = iter(call)
        self._cancelled = False
        self._last_event_id = after_event_id

    @property
    def last_event_id(self) -> int:
        """Id of the last event received (the watch's after_event_id before the first)."""
        return self._last_event_id

    def cancel(self) -> None:
        """Stops the stream; iteration then ends without an error. Cancelling twice is harmless."""
        # The flag goes first: the iterating thread must see it when its read fails.
        self._cancelled = True
        self._call.cancel()

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Event:
        if self._cancelled:
            raise StopIteration
        try:
            message = next(self._messages)
        except grpc.RpcError as exc:
            if self._cancelled:
                raise StopIteration from None
            raise map_rpc_error(exc) from exc
        event = from_proto_event(message)
        self._last_event_id = event.id
        return event

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.cancel()


class AsyncEventStream:
    """A conversation's events as they happen, from `AsyncClient.watch`; mirrors EventStream.

    Use it with `async for` to receive `Event`s and with `async with` (or `cancel()`) to stop
    it. After `cancel()` iteration ends without an error.

    Raises:
        ContextWMError: While iterating, for any failure other than this stream's cancel.
    """

    def __init__(self, call: _AsyncStreamCall, after_event_id: int) -> None:
        self._call = call
        self._cancelled = False
        self._last_event_id = after_event_id

    @property
    def last_event_id(self) -> int:
        """Id of the last event received (the watch's after_event_id before the first)."""
        return self._last_event_id

    def cancel(self) -> None:
        """Stops the stream; iteration then ends without an error. Cancelling twice is harmless."""
        self._cancelled = True
        self._call.cancel()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Event:
        if self._cancelled:
            raise StopAsyncIteration
        try:
            message = await self._call.read()
        except grpc.RpcError as exc:
            if self._cancelled:
                raise StopAsyncIteration from None
            raise map_rpc_error(exc) from exc
        except asyncio.CancelledError:
            # grpc.aio's read() raises CancelledError once the call is cancelled. After our
            # own cancel() that is the end of the stream, unless the task awaiting it is
            # being cancelled too: that cancellation must go through.
            task = asyncio.current_task()
            if self._cancelled and (task is None or not task.cancelling()):
                raise StopAsyncIteration from None
            raise
        # read() returns an Event, or grpc.aio.EOF when the server ended the stream.
        if not isinstance(message, pb.Event):
            raise StopAsyncIteration
        event = from_proto_event(message)
        self._last_event_id = event.id
        return event

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.cancel()
