"""Secure by default: loopback and a Unix socket stay open without keys; any other address
needs API keys and TLS both, or insecure; a refusal is one line that says what to do."""

from __future__ import annotations

import pytest
from contextwm.exposure import Exposure, is_loopback, refusal


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.3.2.1", "localhost", "LocalHost", "::1", "[::1]", "::ffff:127.0.0.1"],
)
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    assert refusal(Exposure(host, 50051)) is None


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "", "10.1.2.3", "192.168.0.7", "fe80::1", "::ffff:10.0.0.1"]
)
def test_other_addresses_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("host", ["localhost.example.com", "my-host", "127.0.0.1.nip.io"])
def test_names_other_than_localhost_are_not_taken_for_loopback(host: str) -> None:
    # Not resolved: what a name resolves to may change after the check.
    assert not is_loopback(host)


def test_a_unix_socket_is_open_without_keys_whatever_the_host() -> None:
    assert refusal(Exposure("0.0.0.0", 50051, socket="/run/cwm.sock")) is None


def test_every_interface_without_keys_and_tls_is_refused_in_one_line() -> None:
    why = refusal(Exposure("0.0.0.0", 50051))
    assert why == (
        "refusing to listen on 0.0.0.0:50051 without API keys and TLS: anyone who reaches the"
        " port could read and delete every conversation; set require_api_keys and"
        " tls_cert_file/tls_key_file, or pass --insecure on a network you trust"
    )
    assert "\n" not in why


def test_keys_without_tls_and_tls_without_keys_each_name_what_is_missing() -> None:
    keys_only = refusal(Exposure("10.0.0.5", 7, api_keys=True))
    assert keys_only is not None
    assert keys_only.startswith("refusing to listen on 10.0.0.5:7 without TLS:")
    assert "set tls_cert_file and tls_key_file" in keys_only
    tls_only = refusal(Exposure("10.0.0.5", 7, tls=True))
    assert tls_only is not None
    assert tls_only.startswith("refusing to listen on 10.0.0.5:7 without API keys:")
    assert "set require_api_keys" in tls_only
    for why in (keys_only, tls_only):
        assert why.endswith("or pass --insecure on a network you trust")


def test_an_ipv6_address_is_shown_in_brackets() -> None:
    why = refusal(Exposure("::", 50051))
    assert why is not None and why.startswith("refusing to listen on [::]:50051 ")


def test_keys_and_tls_together_open_any_address() -> None:
    for host in ("0.0.0.0", "::", "10.0.0.5"):
        assert refusal(Exposure(host, 50051, api_keys=True, tls=True)) is None


@pytest.mark.parametrize(("api_keys", "tls"), [(False, False), (True, False), (False, True)])
def test_insecure_opens_any_address(api_keys: bool, tls: bool) -> None:
    exposure = Exposure("0.0.0.0", 50051, api_keys=api_keys, tls=tls, insecure=True)
    assert refusal(exposure) is None
