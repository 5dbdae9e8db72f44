"""The transport of retention: policies in settings, and runs."""
