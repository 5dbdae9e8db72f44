"""The data directory as a whole: its layout, the lock that keeps one server on it, the
checks before a server starts on it, and the offline check of `contextwm check`.

    layout    where the store, the index files and the lock are
    lock      one server per directory (flock), and who holds it
    startup   the store is sound and not missing: refused otherwise, before serving
    checkup   the offline check: store, conversations, vectors and index files
    findings  what the check found (problems, notes) and how it reads
"""
