"""Turns a query into the terms a lexical (BM25) search should look for."""

from __future__ import annotations

import re
import unicodedata

# Function words and question words carry no evidence: matching "what" or "did" would rank
# every question in the archive.
_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    tell said say says remember recall know mentioned mention again please thanks thank ok okay
    yes yeah hi hello also get got one ever us let lets
    """.split()  # noqa: SIM905
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_TERMS = 32


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased content words of text, in order, at most MAX_TERMS.

    Tokens follow FTS5's unicode61 rule (letters and digits, split on everything else), so a
    file name like kestrel_sync.py gives kestrel, sync, py, as the index holds it.
    """
    seen: dict[str, None] = {}
    # NFC first: in decomposed text a combining accent would split "résumé" in two.
    for word in _WORD.findall(unicodedata.normalize("NFC", text).lower()):
        if word in _STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        seen.setdefault(word, None)
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)
