"""The transport of re-embedding after a change of model."""
