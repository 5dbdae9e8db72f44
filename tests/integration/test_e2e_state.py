"""Conversation state detection and the adaptive window size."""

from __future__ import annotations

from contextwm_client import Client, ConversationSettings


def test_state_follows_the_conversation(client: Client) -> None:
    client.append("s", "Let's plan the weekend trip to the lake.")
    assert client.get_conversation("s").state == "general"
    for text in [
        "I'm getting a traceback: KeyError in the parser.",
        "The bug shows up when the config file is missing.",
        "Can you debug why the fix did not stick?",
    ]:
        client.append("s", text)
    assert client.get_conversation("s").state == "debugging"
    for text in [
        "Now implement a function that parses the module imports.",
        "Add a class for the API client and refactor the code.",
        "Then write the function that returns the imports.",
        "Please implement the code for the new class.",
    ]:
        client.append("s", text)
    assert client.get_conversation("s").state == "coding"
    assert client.get_context("s", None, max_tokens=100).state == "coding"


def test_adaptive_window_grows_with_complexity_and_is_reported(client: Client) -> None:
    client.create_conversation(
        "a", settings=ConversationSettings(window_max_tokens=1000, adaptive_window=True)
    )
    limits = []
    for n in range(8):
        r = client.append(
            "a",
            f"Traceback (most recent call last): error {n} in the database api implementation?\n"
            "```python\nraise RuntimeError('boom')\n```",
        )
        limits.append(r.window.token_limit)
        assert r.window.token_count <= r.window.token_limit
    assert limits[-1] > 1000  # grew, by at most base/4 per step
    assert all(b - a <= 250 for a, b in zip([1000, *limits], limits, strict=False))
    conv = client.get_conversation("a")
    assert conv.window.token_limit == limits[-1]
    assert conv.settings.window_max_tokens == 1000


def test_fixed_window_does_not_adapt(client: Client) -> None:
    client.create_conversation("f", settings=ConversationSettings(window_max_tokens=1000))
    for n in range(5):
        r = client.append("f", f"Traceback error {n} in the api implementation?\n```x```")
        assert r.window.token_limit == 1000
