"""The transport of bulk imports."""
