"""The transport of conversations and their items: create, read, list, update, append, pin."""
