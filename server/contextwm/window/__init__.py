"""The bounded window of a conversation: relevance scores, importance, eviction, adaptive size."""
