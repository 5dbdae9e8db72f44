"""The gRPC transport: each feature's RPCs and converters, and the wiring they share.

A feature's package (`conversations/`, `retrieval/`, `agent_loop/`, ...) holds `rpcs.py`, a
mixin with its ContextService methods (convert the request, call the core, convert the
response; no business logic), and `convert.py`, its `to_proto_x` / `from_proto_x`.
`servicer.py` composes the mixins into one servicer; `server.py` builds the gRPC server around
it with `interceptors.py` (errors to statuses, logs, metrics), `access.py` (API keys on the
wire) and `readiness.py` with `store_probe.py` (health); `timestamps.py` holds the one
converter every feature shares. The only package of the service that imports grpc.
"""
