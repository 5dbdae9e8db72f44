"""The transport of the agent loop: usage, active context, compaction, checkpoints, Watch."""
