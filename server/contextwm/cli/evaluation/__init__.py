"""`contextwm eval`: a user's labelled queries against a running server, beside the simple
selectors on the same items (the repository's conversation benchmarks score the same way)."""
