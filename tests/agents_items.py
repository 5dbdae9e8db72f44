"""Input items of the OpenAI Agents SDK in the shapes it hands a session, one of each kind
the adapter must give back exactly."""

from __future__ import annotations

from typing import Any

# As the SDK stores a turn with a tool call (copied from what Runner.run passes add_items),
# then the other kinds of item: parts, images, reasoning, a developer message, blank texts,
# and texts that a careless store would change (spaces, line ends, non-ASCII, JSON).
ITEMS: list[dict[str, Any]] = [
    {"content": "Which port does billing use?", "role": "user"},
    {
        "arguments": '{"service":"billing"}',
        "call_id": "call_1",
        "name": "get_port",
        "type": "function_call",
        "id": "fc_1",
    },
    {"call_id": "call_1", "output": "billing listens on 5432", "type": "function_call_output"},
    {
        "id": "msg_1",
        "content": [
            {
                "annotations": [],
                "text": "Billing uses port 5432.",
                "type": "output_text",
                "logprobs": [],
            }
        ],
        "role": "assistant",
        "status": "completed",
        "type": "message",
    },
    {
        "role": "user",
        "type": "message",
        "content": [
            {"type": "input_text", "text": "And this diagram?"},
            {"type": "input_image", "image_url": "https://example.com/d.png", "detail": "auto"},
            {"type": "input_text", "text": "  second part\r\nwith a CRLF  "},
        ],
    },
    {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "The user asks about a diagram."}],
        "encrypted_content": "gAAAAABo-opaque",
    },
    {"role": "developer", "content": "Answer in one sentence."},
    {"role": "assistant", "content": ""},
    {
        "call_id": "call_2",
        "output": [{"type": "input_text", "text": 'Grüße — 東京 🚀 {"json": [1, 2.5, null]}'}],
        "type": "function_call_output",
    },
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_2",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": "I cannot open that file."}],
    },
]
