"""The workspace file and tool availability RPCs of ContextService."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.domain.errors import InvalidArgument
from contextwm.tool_availability.service import ToolSessions
from contextwm.transport.workspace_files.convert import (
    from_proto_chunk_strategy,
    from_proto_search_files_request,
    to_proto_edit_file_response,
    to_proto_file_chunk,
    to_proto_search_files_page,
    to_proto_session,
    to_proto_tool_check,
)
from contextwm.workspace_files.service import Position, WorkspaceFiles

_STEPS = {pb.SCROLL_DIRECTION_NEXT: 1, pb.SCROLL_DIRECTION_PREVIOUS: -1}


def _record(request: pb.ReadFileChunkRequest | pb.ScrollFileRequest) -> bool:
    return request.record if request.HasField("record") else True


class FileRpcs:
    """Needs self._files and self._tools, set by the servicer."""

    _files: WorkspaceFiles
    _tools: ToolSessions

    def ReadFileChunk(
        self, request: pb.ReadFileChunkRequest, context: grpc.ServicerContext
    ) -> pb.FileChunk:
        which = request.WhichOneof("position")
        position = Position(
            index=request.chunk_index if which == "chunk_index" else None,
            line=request.line if which == "line" else None,
            text=request.text if which == "text" else None,
        )
        chunk = self._files.read_chunk(
            request.namespace,
            request.conversation_id,
            request.path,
            strategy=from_proto_chunk_strategy(request.strategy),
            max_lines=request.max_lines,
            max_tokens=request.max_tokens,
            position=position,
            record=_record(request),
        )
        return to_proto_file_chunk(chunk)

    def ScrollFile(
        self, request: pb.ScrollFileRequest, context: grpc.ServicerContext
    ) -> pb.FileChunk:
        which = request.WhichOneof("move")
        if which == "direction":
            if request.direction not in _STEPS:
                raise InvalidArgument("direction must be SCROLL_DIRECTION_NEXT or _PREVIOUS")
            chunk = self._files.scroll(
                request.namespace,
                request.conversation_id,
                step=_STEPS[request.direction],
                record=_record(request),
            )
        elif which in ("line", "text"):
            position = (
                Position(line=request.line) if which == "line" else Position(text=request.text)
            )
            chunk = self._files.scroll(
                request.namespace,
                request.conversation_id,
                position=position,
                record=_record(request),
            )
        else:
            raise InvalidArgument("give one of direction, line and text")
        return to_proto_file_chunk(chunk)

    def SearchFiles(
        self, request: pb.SearchFilesRequest, context: grpc.ServicerContext
    ) -> pb.SearchFilesPage:
        query = from_proto_search_files_request(request, self._files.context_lines)
        page = self._files.search(
            request.namespace, request.conversation_id, query, request.page_token
        )
        return to_proto_search_files_page(page)

    def EditFile(
        self, request: pb.EditFileRequest, context: grpc.ServicerContext
    ) -> pb.EditFileResponse:
        result = self._files.edit(
            request.namespace,
            request.conversation_id,
            request.path,
            request.search,
            request.replace,
            request.expected_sha256,
        )
        return to_proto_edit_file_response(result)

    def SetSessionState(
        self, request: pb.SetSessionStateRequest, context: grpc.ServicerContext
    ) -> pb.Session:
        session, tools = self._tools.set_states(
            request.namespace,
            request.conversation_id,
            tuple(request.set),
            tuple(request.clear),
            request.clear_all,
        )
        return to_proto_session(request.conversation_id, session, tools)

    def GetSession(
        self, request: pb.GetSessionRequest, context: grpc.ServicerContext
    ) -> pb.Session:
        session, tools = self._tools.get(request.namespace, request.conversation_id)
        return to_proto_session(request.conversation_id, session, tools)

    def CheckTool(
        self, request: pb.CheckToolRequest, context: grpc.ServicerContext
    ) -> pb.ToolCheck:
        check = self._tools.check(request.namespace, request.conversation_id, request.tool)
        return to_proto_tool_check(check)
