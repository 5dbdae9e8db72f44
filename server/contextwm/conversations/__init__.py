"""Conversations and their live runtimes: create, append with eviction, vectors, consistency."""
