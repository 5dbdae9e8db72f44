"""Erasure: forgetting the items a filter matches, or a whole conversation, everywhere their
text or vectors live, with a receipt of what went."""
