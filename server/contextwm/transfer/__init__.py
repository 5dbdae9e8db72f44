"""Exports and restores: conversations as JSON Lines, copied exactly between servers and
stores."""
