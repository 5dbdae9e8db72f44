"""contextwm: a context window manager for LLM agents, served over gRPC."""

__all__ = ["__version__"]

__version__ = "0.1.0"
