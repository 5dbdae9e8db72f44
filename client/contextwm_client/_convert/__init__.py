"""Conversions between the client's value types and the generated protobuf messages.

One module per feature, as the server's transport groups its converters, and `common` for
what they share. `to_proto_x` builds the message `x` (named after the proto message,
snake_case) from a value, `from_proto_x` reads it back. Only the directions the clients use
live here: requests are built, responses read. (The tests hold the other directions, for
round trips and fakes.) Proto3 `optional` fields and message fields are read with `HasField`,
so "unset" comes back as None rather than as 0 or "". Strings of a vocabulary are passed on as
the server sent them, typed with their `Literal` (see `_vocabulary`).
"""
