"""The transport of the enhanced context and search."""
