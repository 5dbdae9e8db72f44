"""The transport of statistics: what the store holds."""
