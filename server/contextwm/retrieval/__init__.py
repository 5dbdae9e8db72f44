"""Enhanced context and search: hybrid ranking, time words, and assembly under a token budget."""
