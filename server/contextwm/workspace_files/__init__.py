"""An agent's workspace files: reading them in chunks, searching them, editing them safely."""

from contextwm.workspace_files.chunk_cache import ChunkCache
from contextwm.workspace_files.chunking import chunk_at, chunk_of_line, chunk_of_text, plan_chunks
from contextwm.workspace_files.file_search import search_files

__all__ = [
    "ChunkCache",
    "chunk_at",
    "chunk_of_line",
    "chunk_of_text",
    "plan_chunks",
    "search_files",
]
