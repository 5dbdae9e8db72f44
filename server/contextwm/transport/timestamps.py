"""Timestamps between protobuf and the core's float seconds, for every feature's converters."""

from __future__ import annotations

from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp


def to_proto_timestamp(seconds: float) -> Timestamp:
    # Core timestamps are float seconds, exact to well under a microsecond for any date
    # up to 9999; rounding to whole microseconds gives back what the client sent.
    micros = round(seconds * 1_000_000)
    return Timestamp(seconds=micros // 1_000_000, nanos=(micros % 1_000_000) * 1000)


def from_proto_timestamp(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def to_proto_datetime(moment: datetime) -> Timestamp:
    return to_proto_timestamp(moment.timestamp())
