"""The agent loop's calls: usage, active context, compaction, truncation, checkpoints, watch."""
