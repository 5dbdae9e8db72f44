"""The PostgreSQL store, for several replicas on one database (being built: its connections,
schema migration and conversation role so far; SQLite stays the default)."""
