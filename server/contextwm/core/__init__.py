"""The core: window, scoring, retrieval and assembly. Never imports grpc or the stubs."""
