"""The PostgreSQL store, for several replicas on one database (being built: its connections
and schema migration so far; SQLite stays the default)."""
