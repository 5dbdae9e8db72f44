"""Small interfaces the features depend on; adapters in contextwm.adapters implement them."""
