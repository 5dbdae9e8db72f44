"""The background indexer: embeds appended items in batches, paced against requests."""
