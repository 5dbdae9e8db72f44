"""Retention: per-namespace and per-conversation policies that remove old archived items and
inactive conversations, on request (with a dry run) and in a background task."""
