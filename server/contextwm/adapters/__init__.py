"""Adapters behind the ports: SQLite store, FAISS index, embedders, token counters, workspace."""
