"""Conversation state detection, and a window size that adapts to the state and complexity."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from contextwm.domain.conversations import ConversationState

_STATE_WORDS: dict[ConversationState, re.Pattern[str]] = {
    ConversationState.DEBUGGING: re.compile(
        r"\b(error|bug|debug|fix|exception|traceback|crash|fails?|failing|broken|stack ?trace)\b"
    ),
    ConversationState.CODING: re.compile(
        r"\b(code|function|class|import|def|return|module|refactor|implement|compile|api)\b|```"
    ),
    ConversationState.RESEARCH: re.compile(
        r"\b(research|find|search|learn|study|analy[sz]e|compare|paper|sources?|survey)\b"
    ),
}
# How much larger than its base the window of each state should be: debugging and coding
# keep traces and code in view, which takes more room.
_TASK_MULTIPLIER = {
    ConversationState.GENERAL: 1.0,
    ConversationState.CODING: 1.5,
    ConversationState.DEBUGGING: 2.0,
    ConversationState.RESEARCH: 1.3,
}
_TECH_TERMS = re.compile(r"\b(algorithm|implementation|architecture|database|api)\b")
_ERROR_TERMS = re.compile(r"\b(error|exception|traceback|failed)\b")
RECENT = 10


def detect_state(recent_texts: Sequence[str]) -> ConversationState:
    """The state the newest items point to, or GENERAL.

    Each of the last ten items votes, newer ones louder, and a state needs a clear lead: a
    verdict from the last item alone would flip on one stray word.
    """
    votes = dict.fromkeys(_STATE_WORDS, 0.0)
    texts = list(recent_texts)[-RECENT:]
    for age, text in enumerate(reversed(texts)):
        weight = 1.0 / (1.0 + 0.25 * age)
        for state in _states_named(text):
            votes[state] += weight
    best = max(votes, key=lambda s: votes[s])
    return best if votes[best] >= 1.0 else ConversationState.GENERAL


@functools.lru_cache(maxsize=4096)
def _states_named(text: str) -> tuple[ConversationState, ...]:
    """The states whose words a text holds. Cached: every append looks at the newest ten
    items again, nine of which it has seen before."""
    lower = text.lower()
    return tuple(state for state, pattern in _STATE_WORDS.items() if pattern.search(lower))


def complexity(recent_texts: Sequence[str]) -> float:
    """Complexity in 0..1: code blocks, errors, long messages, technical terms and questions
    among the last ten items, at most two indicators per item counted."""
    texts = list(recent_texts)[-RECENT:]
    if not texts:
        return 0.0
    total = 0
    for text in texts:
        lower = text.lower()
        total += (
            ("```" in text)
            + bool(_ERROR_TERMS.search(lower))
            + (len(text) > 500)
            + bool(_TECH_TERMS.search(lower))
            + ("?" in text)
        )
    return min(total / (len(texts) * 2), 1.0)


def adapt_window(
    base: int, current: int, recent_texts: Sequence[str], state: ConversationState
) -> int:
    """The recommended token limit: base x state multiplier x (0.5 + 2.5 x complexity), kept
    within [base/2, 4 x base] and moved by at most base/4 per step, so the window never jumps."""
    target = int(base * _TASK_MULTIPLIER[state] * (0.5 + 2.5 * complexity(recent_texts)))
    target = max(max(1, base // 2), min(target, base * 4))
    step = max(1, base // 4)
    if abs(target - current) > step:
        return current + step if target > current else current - step
    return target
