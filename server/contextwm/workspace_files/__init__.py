"""An agent's workspace files: reading them in chunks, searching them, editing them safely."""
