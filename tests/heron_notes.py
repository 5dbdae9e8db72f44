"""A fact, the question that asks for it in other words, and notes it hides among: a small
conversation in which only dense retrieval finds the fact (the tests of alternative engines)."""

FACT = "The staging database for project Heron runs on host db-heron-7."
QUERY = "Which machine hosts Heron's staging database?"
FILLER = [
    f"Note {i}: the {topic} review moved to {day}."
    for i, (topic, day) in enumerate(
        (t, d)
        for t in ("design", "budget", "hiring", "security", "roadmap")
        for d in ("Monday", "Tuesday", "Thursday", "Friday")
    )
]
