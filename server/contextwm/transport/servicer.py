"""The ContextService servicer: each feature's RPCs, from its transport package, in one class."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc

from contextwm.access.keys import Keys
from contextwm.agent_loop.loop import AgentLoop
from contextwm.budgets.context import CategoryContexts
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.imports import Imports
from contextwm.erasure.service import Erasure
from contextwm.reembedding.reembedder import Reembedder
from contextwm.retention.apply import Retention
from contextwm.retrieval.retriever import Retriever
from contextwm.tool_availability.service import ToolSessions
from contextwm.transfer.service import Transfers
from contextwm.transport.agent_loop.rpcs import AgentLoopRpcs
from contextwm.transport.conversations.rpcs import ConversationRpcs
from contextwm.transport.erasure.rpcs import ErasureRpcs
from contextwm.transport.importing.rpcs import ImportRpcs
from contextwm.transport.keys.rpcs import KeyRpcs
from contextwm.transport.reembedding.rpcs import ReembedRpcs
from contextwm.transport.retention.rpcs import RetentionRpcs
from contextwm.transport.retrieval.rpcs import RetrievalRpcs
from contextwm.transport.stats.rpcs import StatsRpcs
from contextwm.transport.transfer.rpcs import TransferRpcs
from contextwm.transport.workspace_files.rpcs import FileRpcs
from contextwm.workspace_files.service import WorkspaceFiles


class ContextServicer(
    AgentLoopRpcs,
    ConversationRpcs,
    ErasureRpcs,
    FileRpcs,
    ImportRpcs,
    KeyRpcs,
    ReembedRpcs,
    RetentionRpcs,
    RetrievalRpcs,
    StatsRpcs,
    TransferRpcs,
    pb_grpc.ContextServiceServicer,
):
    """No business logic here; errors are mapped to statuses by the error interceptor."""

    def __init__(
        self,
        engine: ContextEngine,
        retriever: Retriever,
        categories: CategoryContexts,
        loop: AgentLoop,
        imports: Imports,
        retention: Retention,
        reembedder: Reembedder,
        files: WorkspaceFiles,
        tools: ToolSessions,
        transfers: Transfers,
        keys: Keys,
        erasure: Erasure,
    ) -> None:
        self._engine = engine
        self._erasure = erasure
        self._keys = keys
        self._files = files
        self._tools = tools
        self._imports = imports
        self._transfers = transfers
        self._retriever = retriever
        self._categories = categories
        self._loop = loop
        self._retention = retention
        self._reembedder = reembedder
