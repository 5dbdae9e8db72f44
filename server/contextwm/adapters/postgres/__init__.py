"""The PostgreSQL store, for several replicas on one database (being built: see store.py for
the roles it serves so far; SQLite stays the default)."""
