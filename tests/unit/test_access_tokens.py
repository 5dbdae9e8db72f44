"""API key tokens: their form, their digests, and the ids read back out of them."""

from __future__ import annotations

import hashlib
import re

from contextwm.access.tokens import key_id_of, new_key_id, new_token, same_digest, token_digest

TOKEN = re.compile(r"cwm_[0-9a-f]{12}_[0-9a-f]{64}")


def test_a_new_token_carries_its_key_id_and_a_fresh_secret() -> None:
    key_id = new_key_id()
    assert re.fullmatch(r"[0-9a-f]{12}", key_id)
    first, second = new_token(key_id), new_token(key_id)
    assert TOKEN.fullmatch(first) and TOKEN.fullmatch(second)
    assert first != second  # same id, another secret
    assert key_id_of(first) == key_id_of(second) == key_id
    assert len({new_key_id() for _ in range(100)}) == 100


def test_the_digest_is_the_tokens_sha256_in_hex() -> None:
    token = new_token("0123456789ab")
    assert token_digest(token) == hashlib.sha256(token.encode()).hexdigest()
    assert token_digest(token) != token_digest(new_token("0123456789ab"))
    assert token not in token_digest(token)


def test_malformed_tokens_have_no_key_id() -> None:
    good = "cwm_0123456789ab_" + "f" * 64
    assert key_id_of(good) == "0123456789ab"
    for bad in (
        "",
        "cwm",
        "0123456789ab",
        "cwm_0123456789ab",
        "cwm_0123456789ab_",
        "cwm_0123456789ab_" + "f" * 63,  # secret too short
        "cwm_0123456789ab_" + "f" * 65,  # too long
        "cwm_0123456789AB_" + "f" * 64,  # upper case
        "cwm_0123456789a_" + "f" * 64,  # id too short
        "xyz_0123456789ab_" + "f" * 64,  # another prefix
        "cwm_0123456789ab_" + "g" * 64,  # not hex
        " " + good,
        good + "\n",
        "Bearer " + good,
    ):
        assert key_id_of(bad) is None, bad


def test_digests_compare_equal_only_when_equal() -> None:
    digest = token_digest("cwm_0123456789ab_" + "f" * 64)
    assert same_digest(digest, str(digest))
    assert not same_digest(digest, digest[:-1] + ("0" if digest[-1] != "0" else "1"))
    assert not same_digest(digest, "")
