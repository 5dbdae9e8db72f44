"""The transport of workspace files and tool availability."""
