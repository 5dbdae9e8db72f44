"""The transport of exports and exact restores."""
