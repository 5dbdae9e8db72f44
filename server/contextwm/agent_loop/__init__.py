"""The agent loop: usage, active context, compaction, truncation, checkpoints, watching events."""
