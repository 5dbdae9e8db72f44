"""Reading an agent's workspace files in chunks: planning the chunks, and caching the files."""

from contextwm.workspace_files.chunk_cache import ChunkCache
from contextwm.workspace_files.chunking import chunk_at, chunk_of_line, chunk_of_text, plan_chunks

__all__ = ["ChunkCache", "chunk_at", "chunk_of_line", "chunk_of_text", "plan_chunks"]
