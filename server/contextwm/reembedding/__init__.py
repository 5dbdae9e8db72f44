"""Re-embedding after a change of embedding model: stale conversations brought to the model."""
