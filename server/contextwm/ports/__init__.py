"""Small interfaces the core depends on; adapters in contextwm.adapters implement them."""
