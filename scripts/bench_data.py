"""Seeded synthetic conversations with planted facts and late questions, for retrieval benches.

A conversation is a few hundred alternating user/assistant turns over 8-15 sessions. Facts are
planted in the first 40% of the turns; each has a question, kept apart from the turns, that the
benchmark asks after ingesting them. About half the questions share one rare token with their
answer turn (a lexical match for BM25, little else for an embedding); the rest paraphrase the
fact with no rare token shared. Filler covers everyday and agentic topics, and every fact gets
distractor turns on the same topic with different details, so neither ranker wins for free.

Everything is drawn from one ``random.Random(seed)``: the same seed gives the same conversation.
"""

from __future__ import annotations

import functools
import random
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypedDict

from contextwm_client import Role

__all__ = [
    "MULTI_HOP",
    "PARAPHRASE",
    "RARE_WORD",
    "BenchConversation",
    "IngestItem",
    "Question",
    "Turn",
    "generate_conversation",
    "generate_corpus",
    "ingest_items",
    "multi_hop_questions",
]

USER: Role = "user"
ASSISTANT: Role = "assistant"
RARE_WORD = "rare_word"
PARAPHRASE = "paraphrase"
MULTI_HOP = "multi_hop"
# A multi-hop question's two answers lie in different sessions at least this far apart.
_HOP_DISTANCE = 100

# Facts go in the first 40% of the turns, so every answer is far behind any recent window.
_PLANT_FRACTION = 0.4
# Every turn aims for 20-60 BPE tokens; the estimate below is within ~10% of cl100k here.
_MIN_TOKENS = 22
_MAX_TOKENS = 56
_PIECES = re.compile(r"[A-Za-z]+|\d+|[^\w\s]|_")


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a benchmark conversation."""

    role: Role
    content: str
    timestamp: datetime
    session: int


@dataclass(frozen=True, slots=True)
class Question:
    """A query asked after ingestion; ``answer_turn`` indexes ``BenchConversation.turns``.

    ``family`` names the fact template family and ``distractor_turns`` lists the turns on the
    same topic with different details (both for per-family reports and confusion analysis).
    """

    text: str
    answer_turn: int
    kind: str
    shares_rare_word: bool
    rare_word: str | None
    family: str = ""
    distractor_turns: tuple[int, ...] = ()
    also_turns: tuple[int, ...] = ()  # further turns a multi-hop answer needs

    @property
    def evidence(self) -> tuple[int, ...]:
        """Every turn the answer needs."""
        return (self.answer_turn, *self.also_turns)


@dataclass(frozen=True, slots=True)
class BenchConversation:
    """A generated conversation and the questions to ask about it."""

    conversation_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


class IngestItem(TypedDict):
    """One turn shaped for the client's append call."""

    role: Role
    content: str
    timestamp: datetime
    metadata: dict[str, str]


# ---------------------------------------------------------------- rare token generators

# A generator returns (token, core): the core is the part a tokenizer keeps as one rare term
# (the digits of "INC-48213", the invented stem of "vorrin_sync.py"); uniqueness is checked on it.
_Rare = Callable[[random.Random], tuple[str, str]]

_ONSETS = (
    "b", "br", "c", "cr", "d", "dr", "f", "fl", "g", "gr", "h", "k", "kr", "l", "m", "n", "p",
    "pr", "qu", "r", "s", "sk", "st", "t", "th", "tr", "v", "w", "z",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou", "ia", "y")
_CODAS = ("l", "n", "r", "s", "th", "v", "x", "nd", "rn", "ll", "sk", "m", "rr", "nt", "lk")
_ENDINGS = ("a", "el", "in", "is", "on", "ar", "ette", "elle", "ius", "ora", "wyn", "ith")
_PREFIXES = (
    "Quill", "Marrow", "Thistle", "Ember", "Hollow", "Brindle", "Copper", "Gloam", "Hazel",
    "Juniper", "Lark", "Nettle", "Oaken", "Rook", "Sable", "Tansy", "Umber", "Vellum", "Wren",
    "Yarrow", "Cinder", "Flint", "Gorse", "Heron", "Bramble", "Kestle", "Morrow", "Pewter",
    "Quince", "Russet", "Sorrel", "Tallow", "Vetch", "Wicker", "Alder", "Bracken", "Corvid",
)  # fmt: skip
_SUFFIXES = (
    "feather", "vane", "mere", "wick", "gate", "brook", "thorn", "moor", "ridge", "fall",
    "stead", "wold", "combe", "shaw", "holt", "worth", "den", "mantle", "spire", "reach",
    "hallow", "loft", "quay", "crest", "fen", "marsh", "glen", "haven", "cairn", "wharf",
)  # fmt: skip
_LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"  # no I or O: they read as digits on plates and codes


def _invented(rng: random.Random) -> str:
    """A pronounceable invented word of 6-10 letters, lower case."""
    while True:
        word = (
            rng.choice(_ONSETS)
            + rng.choice(_VOWELS)
            + rng.choice(_CODAS)
            + rng.choice(_ONSETS[:20])
            + rng.choice(_ENDINGS)
        )
        if 6 <= len(word) <= 10:
            return word


def _compound(rng: random.Random) -> str:
    return rng.choice(_PREFIXES) + rng.choice(_SUFFIXES)


def _rare_person(rng: random.Random) -> tuple[str, str]:
    word = _invented(rng)
    return word.capitalize(), word


def _rare_compound(rng: random.Random) -> tuple[str, str]:
    word = _compound(rng)
    return word, word.lower()


def _rare_digits(low: int, high: int) -> _Rare:
    def make(rng: random.Random) -> tuple[str, str]:
        digits = str(rng.randint(low, high))
        return digits, digits

    return make


def _rare_ticket(prefix: str, width: int) -> _Rare:
    def make(rng: random.Random) -> tuple[str, str]:
        digits = str(rng.randint(10 ** (width - 1), 10**width - 1))
        return f"{prefix}-{digits}", digits

    return make


def _rare_host(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    return f"{stem}-{rng.randint(2, 49)}", stem


def _rare_file(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    verb = rng.choice(("sync", "export", "backfill", "sweep", "relay", "reindex", "patch"))
    return f"{stem}_{verb}.{rng.choice(('py', 'sh', 'ts', 'go'))}", stem


def _rare_flag(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    return f"ff_{stem}_{rng.choice(('beta', 'rollout', 'v2', 'gate'))}", stem


def _rare_env(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    return f"{stem.upper()}_{rng.choice(('OPT', 'CFG', 'KNOB', 'PARAM'))}", stem


def _rare_function(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    verb = rng.choice(("load", "parse", "resolve", "merge", "flush", "build"))
    noun = rng.choice(("header", "batch", "token", "cursor", "chunk", "entry"))
    return f"{verb}_{stem}_{noun}", stem


def _rare_bucket(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    kind = rng.choice(("archive", "vault", "store", "backup"))
    return f"{stem}-{kind}-{rng.choice(('eu', 'us', 'ap'))}", stem


def _rare_branch(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    return f"feat/{stem}-{rng.choice(('rework', 'spike', 'trial', 'cleanup'))}", stem


def _rare_ssh_key(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    return f"id_ed25519_{stem}", stem


def _rare_alert(rng: random.Random) -> tuple[str, str]:
    stem = _invented(rng)
    suffix = rng.choice(("Breach", "Watch", "Spike", "Burn", "Alarm"))
    return f"{stem.capitalize()}{suffix}", stem


def _rare_code(length: int, *, digits: bool) -> _Rare:
    alphabet = _LETTERS + ("23456789" if digits else "")

    def make(rng: random.Random) -> tuple[str, str]:
        code = "".join(rng.choice(alphabet) for _ in range(length))
        return code, code.lower()

    return make


def _rare_plate(rng: random.Random) -> tuple[str, str]:
    letters = rng.choice(_LETTERS) + rng.choice(_LETTERS)
    plate = f"{letters}{rng.randint(1000, 9999)}{rng.choice(_LETTERS)}"
    return plate, plate.lower()


def _rare_tracking(rng: random.Random) -> tuple[str, str]:
    body = "".join(rng.choice(_LETTERS + "0123456789") for _ in range(12))
    return f"1Z{body}", f"1z{body.lower()}"


# ---------------------------------------------------------------- slot pools

_CITIES = (
    "Lisbon", "Porto", "Berlin", "Vienna", "Prague", "Madrid", "Barcelona", "Rome", "Milan",
    "Athens", "Dublin", "Edinburgh", "Copenhagen", "Stockholm", "Oslo", "Helsinki", "Warsaw",
    "Budapest", "Amsterdam", "Brussels", "Lyon", "Marseille", "Toronto", "Vancouver", "Chicago",
    "Denver", "Austin", "Seattle", "Boston", "Mexico City", "Buenos Aires", "Santiago", "Tokyo",
    "Seoul", "Singapore", "Bangkok", "Sydney", "Melbourne", "Auckland", "Istanbul", "Cairo",
    "Marrakesh", "Zurich", "Munich", "Hamburg", "Valencia", "Bologna", "Ljubljana",
)  # fmt: skip
_NAMES = (
    "Priya", "Marcus", "Elena", "Tomasz", "Aisha", "Jonas", "Mei", "Diego", "Sofia", "Kwame",
    "Hannah", "Luca", "Yuki", "Omar", "Freya", "Mateo", "Ingrid", "Ravi", "Chloe", "Nikolai",
    "Amara", "Ben", "Leila", "Sven", "Carmen", "Tariq", "Zoe", "Felix", "Nadia", "Oscar",
)  # fmt: skip
_MONTH = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_RELATIVE = (
    "mom", "dad", "sister", "brother", "cousin", "aunt", "uncle", "grandma", "nephew",
    "niece", "partner", "father-in-law",
)  # fmt: skip
_DISH = (
    "lasagna", "curry", "tacos", "ramen", "paella", "stir-fry", "risotto", "chili", "soup",
    "dumplings", "falafel", "pancakes", "roast chicken", "gnocchi", "shakshuka",
)  # fmt: skip
_INGREDIENT = (
    "miso", "tahini", "fennel", "saffron", "lemongrass", "smoked salt", "capers", "anchovies",
    "cardamom", "fresh dill", "chickpeas", "coconut milk", "harissa", "ginger", "brown butter",
)  # fmt: skip
_EXERCISE = (
    "deadlifts", "squats", "intervals", "a long run", "yoga", "swimming", "rowing",
    "pull-ups", "cycling", "kettlebell swings", "bouldering", "hill sprints",
)  # fmt: skip
_GENRE = (
    "sci-fi", "mystery", "history", "fantasy", "biography", "poetry", "essay", "thriller",
    "literary fiction", "graphic novel",
)  # fmt: skip
_SERVICE = (
    "the payments API", "the auth service", "the search indexer", "the notification worker",
    "the reporting job", "the billing service", "the API gateway", "the image resizer",
    "the scheduler", "the web frontend", "the export worker",
)  # fmt: skip
_TOOL = (
    "kubectl", "terraform plan", "pytest", "the linter", "docker compose", "helm diff",
    "the profiler", "git bisect", "mypy", "the load test",
)  # fmt: skip
_COMPONENT = (
    "the retry logic", "the cache layer", "the config loader", "the serializer",
    "the connection pool", "the rate limiter", "the migration script",
    "the auth middleware", "the logging setup", "the CLI parser", "the job queue",
)  # fmt: skip
_STORE = (
    "the hardware store", "the farmers market", "the bookshop", "the pharmacy",
    "the supermarket", "the outdoor shop", "the flea market",
)  # fmt: skip
_DEVICE = (
    "laptop", "phone", "router", "headphones", "tablet", "monitor", "printer", "e-reader",
    "kettle", "vacuum cleaner",
)  # fmt: skip
_PLANT = (
    "tomatoes", "basil", "fig tree", "lavender", "lemon tree", "peppers", "strawberries",
    "mint", "sunflowers", "succulents",
)  # fmt: skip
_ITEM = (
    "scented candle", "leather notebook", "wool blanket", "ceramic teapot", "watch",
    "backpack", "board game", "pair of headphones", "cookbook",
)  # fmt: skip
_POOLS: dict[str, tuple[str, ...]] = {
    "city": _CITIES,
    "city2": _CITIES,
    "name": _NAMES,
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "month": _MONTH,
    "season": ("spring", "summer", "autumn", "winter"),
    "hour": ("five", "six", "seven", "eight", "nine", "ten"),
    "relative": _RELATIVE,
    "dish": _DISH,
    "ingredient": _INGREDIENT,
    "exercise": _EXERCISE,
    "genre": _GENRE,
    "genre_film": ("noir", "horror", "heist", "space", "courtroom", "animated", "western"),
    "instrument": ("guitar", "piano", "violin", "drums", "cello", "ukulele", "saxophone"),
    "service": _SERVICE,
    "tool": _TOOL,
    "lang": ("Python", "Go", "Rust", "TypeScript", "Java", "Kotlin", "SQL", "Elixir"),
    "component": _COMPONENT,
    "store": _STORE,
    "device": _DEVICE,
    "room": ("kitchen", "bathroom", "hallway", "balcony", "bedroom", "living room", "attic"),
    "plant": _PLANT,
    "region": ("eu-west", "us-east", "Frankfurt", "ap-south", "second datacenter"),
    "street": ("Elm Street", "Harbor Road", "Mill Lane", "Station Road", "Oak Avenue"),
    "floor": ("second", "third", "fourth", "fifth", "top", "ground"),
    "item": _ITEM,
}


def _n(rng: random.Random) -> str:
    # Small numbers only: rare number tokens have 4+ digits, so filler can never contain one.
    return str(rng.randint(2, 95))


def _amount(rng: random.Random) -> str:
    return f"${rng.randint(12, 480)}"


def _ticket(rng: random.Random) -> str:
    prefix = rng.choice(("INC", "OPS", "SUP", "BUG", "JIRA", "CHG"))
    return f"{prefix}-{rng.randint(10000, 99999)}"


def _chooser(pool: tuple[str, ...]) -> Callable[[random.Random], str]:
    return lambda rng: rng.choice(pool)


def _generated(make: _Rare) -> Callable[[random.Random], str]:
    return lambda rng: make(rng)[0]


# Filler uses the same shapes as rare tokens (hosts, files, ids, invented names), so planted
# tokens do not stand out by form alone; collisions with a planted token are regenerated.
_SLOTS: dict[str, Callable[[random.Random], str]] = {
    **{name: _chooser(pool) for name, pool in _POOLS.items()},
    "n": _n,
    "amount": _amount,
    "ticket": _ticket,
    "host": _generated(_rare_host),
    "file": _generated(_rare_file),
    "flag": _generated(_rare_flag),
    "env": _generated(_rare_env),
    "fn": _generated(_rare_function),
    "bucket": _generated(_rare_bucket),
    "branch": _generated(_rare_branch),
    "alertname": _generated(_rare_alert),
    "person": _generated(_rare_person),
    "codename": _generated(_rare_compound),
}


@functools.cache
def _fields(template: str) -> tuple[str, ...]:
    return tuple(name for _, name, _, _ in string.Formatter().parse(template) if name)


def _fill(rng: random.Random, template: str, fixed: Mapping[str, str] | None = None) -> str:
    """Format ``template``, taking ``fixed`` values first and drawing every other slot."""
    values: dict[str, str] = {}
    for name in _fields(template):
        if name in values:
            continue
        if fixed is not None and name in fixed:
            values[name] = fixed[name]
        else:
            values[name] = _SLOTS[name](rng)
    text = template.format_map(values)
    # Pool values like "the auth service" may open a sentence.
    return "The" + text[3:] if text.startswith("the ") else text


# ---------------------------------------------------------------- fact families


@dataclass(frozen=True, slots=True)
class _Family:
    """A kind of planted fact: templates for the fact, both question kinds, replies, distractors.

    Templates use ``{key}`` (what the fact is about), ``{key_p}`` (a paraphrase of it, for
    paraphrase questions), ``{rare}`` (the rare token) and any pool slot. Replies never use
    ``{rare}``: the rare token must occur in the fact turn only.
    """

    name: str
    rare: _Rare
    keys: tuple[tuple[str, str], ...]
    facts: tuple[str, ...]
    rare_questions: tuple[str, ...]
    paraphrase_questions: tuple[str, ...]
    replies: tuple[str, ...]
    distractors: tuple[str, ...]
    topic_words: tuple[str, ...]
    assistant_facts: tuple[str, ...] = ()

    @property
    def markers(self) -> tuple[str, ...]:
        """Words that mark a turn as on this family's topic (keys included)."""
        return self.topic_words + tuple(key for key, _ in self.keys)


def _keys(*pairs: str) -> tuple[tuple[str, str], ...]:
    split = (pair.split("|") for pair in pairs)
    return tuple((key, para) for key, para in split)


_FAMILIES: tuple[_Family, ...] = (
    _Family(
        name="relative_city",
        rare=_rare_person,
        keys=_keys(
            "sister|sibling",
            "brother|sibling",
            "aunt|mother's sister",
            "uncle|father's brother",
            "grandmother|grandma",
            "niece|sibling's daughter",
            "godfather|godparent",
            "best friend|closest pal",
        ),
        facts=(
            "My {key} {rare} moved to {city} last {season}, so visits will be trickier now.",
            "{rare}, my {key}, finally settled in {city} after years of renting around.",
        ),
        rare_questions=("Which city is {rare} in now?", "Where did {rare} end up settling?"),
        paraphrase_questions=(
            "Where does my {key_p} live these days?",
            "Which town is my {key_p} based in now?",
        ),
        replies=(
            "That's a big change for your {key}. Do you want help planning a visit?",
            "Noted. Moving is stressful, I hope your {key} is settling in well.",
        ),
        distractors=(
            "My {key} {person} is visiting {city} next month and wants restaurant tips.",
            "I called my {key} last night; {person} is thinking about leaving {city}.",
            "My {key} keeps sending me photos from {city}, the weather there looks unreal.",
        ),
        topic_words=("moved", "visit"),
    ),
    _Family(
        name="vault_passphrase",
        rare=_rare_compound,
        keys=_keys(
            "staging|pre-production",
            "production|live customer-facing",
            "development|local dev",
            "QA|testing",
            "disaster recovery|failover",
        ),
        facts=(
            "Remember that the vault passphrase for {key} is {rare}.",
            "The {key} secrets vault unlocks with the passphrase {rare}, don't lose it.",
        ),
        assistant_facts=("I've rotated it: the {key} vault passphrase is now {rare}.",),
        rare_questions=("Which environment was {rare} for?", "What does {rare} unlock?"),
        paraphrase_questions=(
            "What's the secret phrase to open the {key_p} credentials store?",
            "How do I get into the {key_p} secret storage?",
        ),
        replies=(
            "Got it, I won't repeat it in logs. Should I note where the {key} vault lives?",
            "Understood. Worth rotating it again after the release.",
        ),
        distractors=(
            "The {key} vault token expired again, I had to ask {name} for a new one.",
            "Can you remind me to rotate the {key} secrets after the audit?",
            "The passphrase policy for {key} now requires {n} characters minimum.",
        ),
        topic_words=("vault", "passphrase", "secrets"),
    ),
    _Family(
        name="server_role",
        rare=_rare_host,
        keys=_keys(
            "database primary|main DB machine",
            "build runner|CI worker",
            "cache node|caching box",
            "log collector|logging host",
            "message broker|queue machine",
            "bastion host|jump box",
        ),
        facts=(
            "The {key} is {rare}, it sits in the {region} rack.",
            "Heads up, {rare} is our {key} now, the old one got retired.",
        ),
        assistant_facts=("I checked the inventory: {rare} is the {key}, running in {region}.",),
        rare_questions=("What does {rare} do in our setup?", "What is the machine {rare} for?"),
        paraphrase_questions=(
            "Which server acts as our {key_p}?",
            "What's the hostname of the {key_p}?",
        ),
        replies=(
            "Thanks, I'll keep the {key} in mind when we plan maintenance.",
            "Good to know. Is it covered by the monitoring dashboards?",
        ),
        distractors=(
            "{host} is a {key} and its disk is at {n} percent again.",
            "We're replacing {host}, the old {key}, next sprint.",
            "Can you check why {host} (the {key}) rebooted overnight?",
        ),
        topic_words=("server", "rack", "machine"),
    ),
    _Family(
        name="incident_cause",
        rare=_rare_ticket("INC", 5),
        keys=_keys(
            "expired TLS certificate|certificate that lapsed",
            "full disk on the log volume|storage running out",
            "bad DNS record|name resolution mistake",
            "memory leak in the worker|process that kept eating RAM",
            "misconfigured load balancer|traffic splitter setup error",
            "runaway cron job|scheduled task gone wild",
        ),
        facts=(
            "{rare} was the {weekday} outage; the root cause was the {key}.",
            "Closing the loop on {rare}: it all came down to the {key}.",
        ),
        assistant_facts=("I wrote up the postmortem for {rare}: the root cause was the {key}.",),
        rare_questions=("What caused {rare}?", "What went wrong in {rare}?"),
        paraphrase_questions=(
            "Which incident number was the one caused by the {key_p}?",
            "What was the ticket for the outage due to the {key_p}?",
        ),
        replies=(
            "Ugh, the {key} again. Want me to add an alert so we catch it earlier?",
            "Noted. I'll link the postmortem from the runbook.",
        ),
        distractors=(
            "{ticket} was another outage last month, that one from the {key}.",
            "We had a near outage from the {key} on {weekday}, no ticket opened though.",
            "The postmortem for {ticket} lists the {key} as a factor in the outage.",
        ),
        topic_words=("outage", "postmortem", "root cause", "incident"),
    ),
    _Family(
        name="script_purpose",
        rare=_rare_file,
        keys=_keys(
            "retries failed webhook deliveries|re-sends callbacks that errored",
            "cleans up stale preview environments|deletes old temporary test deployments",
            "exports monthly invoices to CSV|dumps billing documents into a spreadsheet",
            "rebuilds the search index|regenerates the lookup data",
            "backfills missing user avatars|fills in absent profile pictures",
        ),
        facts=(
            "The script that {key} is {rare}, it lives under tools/.",
            "FYI {rare} is what {key}; run it with the dry-run flag first.",
        ),
        assistant_facts=("Found it: {rare} is the script that {key}.",),
        rare_questions=("What is {rare} responsible for?", "What does {rare} do?"),
        paraphrase_questions=(
            "Which file {key_p}?",
            "What's the name of the program that {key_p}?",
        ),
        replies=(
            "Thanks. Should it run on a schedule or only by hand?",
            "Good, I'll mention the dry-run flag in the README.",
        ),
        distractors=(
            "{file} {key}, but it's an old version nobody trusts.",
            "I'm reviewing the script that {key}; it has no tests at all.",
            "We should merge {file} into the tool that {key}.",
        ),
        topic_words=("script", "tools/", "file"),
    ),
    _Family(
        name="combination_code",
        rare=_rare_digits(3100, 9899),
        keys=_keys(
            "gym locker|cubby at the fitness center",
            "bike lock|bicycle padlock",
            "garage keypad|car park entrance",
            "office safe|work strongbox",
            "storage unit|rented lockup",
            "suitcase lock|luggage padlock",
        ),
        facts=(
            "The code for my {key} is {rare}, writing it here because I keep forgetting.",
            "New {key} combination: {rare}.",
        ),
        rare_questions=("What is {rare} the combination for?", "What does the number {rare} open?"),
        paraphrase_questions=(
            "What's the combination to my {key_p}?",
            "Which digits open my {key_p}?",
        ),
        replies=(
            "Noted. You might want to keep it in a password manager too.",
            "Got it. Hopefully this one sticks.",
        ),
        distractors=(
            "I reset the {key} combination again, the old one kept jamming.",
            "My {key} won't open, I think the combination got changed.",
            "{name} asked for the {key} combination but I said to text me first.",
        ),
        topic_words=("code", "combination"),
    ),
    _Family(
        name="pet_name",
        rare=_rare_person,
        keys=_keys(
            "parrot|bird",
            "tortoise|reptile",
            "beagle puppy|dog",
            "tabby kitten|cat",
            "rabbit|bunny",
            "hamster|rodent",
        ),
        facts=(
            "We adopted a {key} this weekend and named it {rare}.",
            "Our new {key} is called {rare}, the kids picked it.",
        ),
        rare_questions=("What kind of animal is {rare}?", "What species is {rare}?"),
        paraphrase_questions=(
            "What did we name our new {key_p}?",
            "What do we call the {key_p} that joined the family?",
        ),
        replies=(
            "Congratulations! A {key} is a lot of fun. Do you need a supply checklist?",
            "Lovely. The first weeks with a new pet are always chaotic.",
        ),
        distractors=(
            "My neighbor's {key} escaped again this morning.",
            "{name} is thinking about getting a {key} but worries about vet bills.",
            "The shelter had a {key} that looked just like the one from my childhood.",
        ),
        topic_words=("adopted", "pet", "shelter"),
    ),
    _Family(
        name="doctor",
        rare=_rare_person,
        keys=_keys(
            "dermatologist|skin doctor",
            "dentist|tooth doctor",
            "cardiologist|heart specialist",
            "physiotherapist|knee rehab specialist",
            "optometrist|eye doctor",
            "allergist|allergy specialist",
        ),
        facts=(
            "My {key} is Dr. {rare} at the clinic on {street}.",
            "I switched to a new {key}, Dr. {rare}, and the wait times are much better.",
        ),
        rare_questions=("What does Dr. {rare} treat me for?", "Why do I see Dr. {rare}?"),
        paraphrase_questions=("Who is my {key_p}?", "What's the name of the {key_p} I go to?"),
        replies=(
            "Good to have that written down. Want a reminder before the next appointment?",
            "Noted. Switching doctors can be such a hassle.",
        ),
        distractors=(
            "My {key} appointment got moved to {weekday}, again.",
            "{name} recommended a {key} near {street} but they're not taking new patients.",
            "The {key} bill arrived and insurance only covered part of it.",
        ),
        topic_words=("Dr.", "clinic", "appointment"),
    ),
    _Family(
        name="flight_booking",
        rare=_rare_code(6, digits=True),
        keys=_keys(
            "Reykjavik|Iceland",
            "Osaka|Japan",
            "Nairobi|Kenya",
            "Lima|Peru",
            "Montreal|Quebec",
            "Krakow|Poland",
            "Hanoi|Vietnam",
            "Cape Town|South Africa",
        ),
        facts=(
            "The booking reference for the {key} flight is {rare}.",
            "Flights to {key} are confirmed, reference {rare}, seats not picked yet.",
        ),
        rare_questions=(
            "Where am I flying with reference {rare}?",
            "Which trip is {rare} for?",
        ),
        paraphrase_questions=(
            "What's the confirmation code for my trip to {key_p}?",
            "Which reservation number do I need at check-in for {key_p}?",
        ),
        replies=(
            "Great, I'll remind you to check in a day before.",
            "Nice, {key} should be lovely that time of year.",
        ),
        distractors=(
            "I'm still comparing flights to {key}, prices jumped by {n} euros overnight.",
            "{name} just got back from {key} and says the airport is chaos.",
            "Should I book the {key} flight now or wait for a sale?",
        ),
        topic_words=("flight", "booking", "airport"),
    ),
    _Family(
        name="wifi_password",
        rare=_rare_compound,
        keys=_keys(
            "cabin|lake house",
            "parents' house|mom and dad's place",
            "coworking space|shared office",
            "studio|workshop",
            "beach rental|seaside apartment",
        ),
        facts=(
            "The wifi password at the {key} is {rare}, all one word.",
            "If you need wifi at the {key}, the password is {rare}.",
        ),
        rare_questions=(
            "Where does the network password {rare} work?",
            "Which place is {rare} the login for?",
        ),
        paraphrase_questions=(
            "How do I get online at the {key_p}?",
            "What's the internet key at the {key_p}?",
        ),
        replies=(
            "Noted. The connection there was spotty last time, right?",
            "Got it. Want me to add it to the trip notes?",
        ),
        distractors=(
            "The wifi at the {key} keeps dropping every evening.",
            "{name} changed the router at the {key}, so the old wifi password is gone.",
            "Is the wifi at the {key} fast enough for video calls?",
        ),
        topic_words=("wifi", "password", "router"),
    ),
    _Family(
        name="project_codename",
        rare=_rare_compound,
        keys=_keys(
            "mobile app rewrite|new phone application",
            "billing migration|payments system move",
            "search revamp|new lookup feature",
            "onboarding redesign|new-user signup flow",
            "data warehouse cleanup|analytics storage tidy-up",
        ),
        facts=(
            "Internally we call the {key} project {rare}, so don't be confused in standup.",
            "Codename for the {key} is {rare}; marketing will rename it later.",
        ),
        rare_questions=("What is project {rare} about?", "What does {rare} stand for here?"),
        paraphrase_questions=(
            "What's the internal name for the {key_p}?",
            "What do we call the {key_p} among ourselves?",
        ),
        replies=(
            "Makes sense. Codenames help while the scope is still shifting.",
            "Noted. I'll use it in the planning doc.",
        ),
        distractors=(
            "The {key} project slipped another {n} weeks.",
            "{name} is leading the {key} project now and wants a kickoff on {weekday}.",
            "We need a better name for the {key} project than {codename}.",
        ),
        topic_words=("project", "codename"),
    ),
    _Family(
        name="feature_flag",
        rare=_rare_flag,
        keys=_keys(
            "dark mode|night theme",
            "new checkout|redesigned purchase flow",
            "bulk export|mass download option",
            "smart reminders|automatic nudges",
            "beta editor|experimental text composer",
        ),
        facts=(
            "The {key} is behind the feature flag {rare}, off by default.",
            "To test the {key} locally you need {rare} turned on.",
        ),
        assistant_facts=("The {key} is gated by {rare}; I flipped it on for staging.",),
        rare_questions=("What does the flag {rare} toggle?", "What feature does {rare} control?"),
        paraphrase_questions=(
            "Which flag enables the {key_p}?",
            "What switch do I need for the {key_p}?",
        ),
        replies=(
            "Thanks. We should clean up the flag once it's fully rolled out.",
            "Got it, I'll enable it in my local config.",
        ),
        distractors=(
            "{flag} was the feature flag for the {key}, but we removed it last sprint.",
            "The {key} rollout is at {n} percent of users, flag still on.",
            "Can we turn off the {key} feature for the enterprise customers?",
        ),
        topic_words=("flag", "feature", "rollout"),
    ),
    _Family(
        name="pull_request",
        rare=_rare_digits(3100, 9899),
        keys=_keys(
            "upgrades the ORM|bumps the database library",
            "fixes the timezone bug|corrects the clock offset problem",
            "adds rate limiting|throttles abusive clients",
            "removes the legacy API|deletes the old endpoints",
            "speeds up cold starts|makes boot faster",
        ),
        facts=(
            "PR {rare} {key}; it needs one more approval.",
            "I opened pull request {rare}, it {key}.",
        ),
        assistant_facts=("I reviewed PR {rare}: it {key} and looks good apart from naming.",),
        rare_questions=("What does PR {rare} change?", "What is pull request {rare} about?"),
        paraphrase_questions=(
            "Which PR number {key_p}?",
            "What's the number of the change that {key_p}?",
        ),
        replies=(
            "I'll take a look after lunch. Any risky parts?",
            "Nice, that one has been on the list for a while.",
        ),
        distractors=(
            "Someone else's pull request also {key}, we should coordinate.",
            "Review comment on the PR that {key}: missing tests.",
            "{name}'s PR {n} {key} too, but it's stale.",
        ),
        topic_words=("PR", "pull request"),
    ),
    _Family(
        name="meeting_room",
        rare=_rare_compound,
        keys=_keys(
            "quarterly planning|roadmap session for next quarter",
            "design review|architecture critique",
            "sprint retro|look-back on the last iteration",
            "all-hands|company-wide gathering",
            "interview loop|candidate conversations",
        ),
        facts=(
            "The {key} is booked in the {rare} room on the {floor} floor.",
            "We moved the {key} to the {rare} room since the big one is under renovation.",
        ),
        rare_questions=(
            "What's happening in the {rare} room?",
            "What did I book the {rare} room for?",
        ),
        paraphrase_questions=("Where is the {key_p} being held?", "Which room is the {key_p} in?"),
        replies=(
            "Thanks, I'll update the calendar invite.",
            "Noted. Is there a screen in that room?",
        ),
        distractors=(
            "The {key} ran over by {n} minutes again.",
            "{name} wants to move the {key} to {weekday}.",
            "Do we need a bigger room for the {key}?",
        ),
        topic_words=("room", "meeting", "calendar"),
    ),
    _Family(
        name="colleague_role",
        rare=_rare_person,
        keys=_keys(
            "new tech lead|person leading engineering",
            "on-call manager|escalation contact",
            "security champion|person for vulnerability reports",
            "product owner|one who prioritizes the backlog",
            "design lead|head of UX",
        ),
        facts=(
            "{rare} is our {key} starting next month, coming over from a fintech.",
            "Heads up, the {key} role goes to {rare} after the reorg.",
        ),
        rare_questions=("What's {rare}'s job?", "What role will {rare} have?"),
        paraphrase_questions=("Who is the {key_p}?", "Who should I go to as the {key_p}?"),
        replies=(
            "Good to know. Want me to draft an intro message?",
            "Nice, that should help the team with priorities.",
        ),
        distractors=(
            "{name} used to be the {key} but moved to another team.",
            "We still don't have a {key} for the platform group.",
            "The {key} job posting got {n} applicants.",
        ),
        topic_words=("role", "team", "reorg"),
    ),
    _Family(
        name="secret_ingredient",
        rare=_rare_compound,
        keys=_keys(
            "chili|spicy bean stew",
            "banana bread|loaf I bake with overripe fruit",
            "risotto|creamy rice dish",
            "pho|Vietnamese noodle soup",
            "lasagna|layered pasta bake",
            "shakshuka|eggs poached in tomato sauce",
        ),
        facts=(
            "The secret to my {key} is {rare} smoked paprika from the market stall.",
            "For the {key} I only use {rare} spice mix, nothing else tastes right.",
        ),
        rare_questions=("Which dish do I use {rare} in?", "What do I cook with {rare}?"),
        paraphrase_questions=(
            "What's my trick ingredient for the {key_p}?",
            "What special seasoning goes into my {key_p}?",
        ),
        replies=(
            "Good tip. Do you add it early or at the end?",
            "Sounds delicious. Want me to save the full recipe?",
        ),
        distractors=(
            "I tried a new {key} recipe with {ingredient} and it was too salty.",
            "{name} makes the best {key}; she uses {ingredient} and lots of garlic.",
            "Thinking of cooking {key} on {weekday} for the guests.",
        ),
        topic_words=("recipe", "spice", "cooking"),
    ),
    _Family(
        name="lent_book",
        rare=_rare_compound,
        keys=_keys(
            "neighbor|next-door resident",
            "landlord|apartment owner",
            "manager|boss",
            "roommate|flatmate",
            "yoga teacher|instructor at the studio",
        ),
        facts=(
            "I lent my copy of The {rare} Letters to my {key}, need it back before book club.",
            "My {key} borrowed The {rare} Letters and still hasn't returned it.",
        ),
        rare_questions=(
            "Who is holding onto the {rare} novel?",
            "Who ended up with my {rare} paperback?",
        ),
        paraphrase_questions=(
            "Which book did my {key_p} take from me?",
            "What novel is my {key_p} keeping at the moment?",
        ),
        replies=(
            "I'll remind you to ask for it before book club.",
            "People never return books, it's a universal law.",
        ),
        distractors=(
            "My {key} recommended a thriller set in {city}.",
            "I borrowed a cookbook from my {key} and spilled coffee on it.",
            "My {key} is in a book club too, they only read {genre}.",
        ),
        topic_words=("book", "borrowed", "lent"),
    ),
    _Family(
        name="license_plate",
        rare=_rare_plate,
        keys=_keys(
            "rental car|hire vehicle",
            "moving van|truck for the move",
            "dad's car|father's vehicle",
            "company car|work vehicle",
            "camper van|motorhome",
        ),
        facts=(
            "The {key} has the plate {rare}, in case the parking app asks.",
            "Registration for the {key} is {rare}.",
        ),
        rare_questions=(
            "Which vehicle has plate {rare}?",
            "What is {rare} the registration for?",
        ),
        paraphrase_questions=(
            "What's the license number on the {key_p}?",
            "Which plate should I enter for the {key_p}?",
        ),
        replies=(
            "Noted. Don't forget to register it for the parking zone.",
            "Got it. Is it parked at home or at the office?",
        ),
        distractors=(
            "The {key} got a parking ticket on {weekday}, the camera read the plate.",
            "I need to return the {key} with a full tank by {hour}, I noted the plate at pickup.",
            "{name} scratched the {key} backing out of the garage, right above the plate.",
        ),
        topic_words=("plate", "parking", "registration"),
    ),
    _Family(
        name="race_bib",
        rare=_rare_digits(3100, 9899),
        keys=_keys(
            "half marathon|21k race",
            "trail race|off-road run",
            "triathlon|swim-bike-run event",
            "charity 10k|fundraiser run",
            "cyclosportive|long bike ride event",
        ),
        facts=(
            "My bib for the {key} in {month} is {rare}.",
            "Got my race pack: I'm {rare} at the {key}.",
        ),
        rare_questions=("Which event is bib {rare} for?", "What race am I entered in as {rare}?"),
        paraphrase_questions=(
            "What number am I wearing at the {key_p}?",
            "What's my start number for the {key_p}?",
        ),
        replies=(
            "Exciting! How is the training going?",
            "Nice. Remember to taper the week before.",
        ),
        distractors=(
            "Training for the {key} is going slowly, my knee hurts after {n} kilometers.",
            "{name} signed up for the {key} too.",
            "The {key} route changed this year because of roadworks.",
        ),
        topic_words=("race", "training", "bib"),
    ),
    _Family(
        name="bank_account",
        rare=_rare_digits(3100, 9899),
        keys=_keys(
            "emergency fund|rainy-day savings",
            "brokerage account|investment portfolio",
            "joint account|shared household money",
            "business account|freelance income",
            "travel savings|holiday money pot",
        ),
        facts=(
            "My {key} is the one ending in {rare}, at the online bank.",
            "Transfers for the {key} should go to the account ending {rare}.",
        ),
        rare_questions=(
            "What is the account ending {rare} used for?",
            "What's kept in the account that ends with {rare}?",
        ),
        paraphrase_questions=(
            "What are the last digits for my {key_p}?",
            "Which account number belongs to my {key_p}?",
        ),
        replies=(
            "Noted. Do you want to set up an automatic monthly transfer?",
            "Got it, keeping that separate makes budgeting easier.",
        ),
        distractors=(
            "I moved {n} dollars into the {key} this month.",
            "The interest on the {key} dropped again.",
            "Should I close the old {key} at the high street bank?",
        ),
        topic_words=("account", "bank", "transfer"),
    ),
    _Family(
        name="change_request",
        rare=_rare_ticket("CHG", 5),
        keys=_keys(
            "payments API|money-handling service",
            "auth service|login backend",
            "search indexer|indexing pipeline",
            "notification service|email and push sender",
            "reporting database|analytics store",
        ),
        facts=(
            "The {key} deploy goes out under change request {rare} on {weekday} night.",
            "{rare} is the change request for the {key} upgrade.",
        ),
        assistant_facts=("I filed {rare} for the {key} rollout; it's approved for {weekday}.",),
        rare_questions=("What does change {rare} deploy?", "What's being rolled out under {rare}?"),
        paraphrase_questions=(
            "Which change ticket covers the release of the {key_p}?",
            "What's the approval number for shipping the {key_p}?",
        ),
        replies=(
            "Thanks. Do we have a rollback plan written down?",
            "Good, I'll keep the pager nearby that night.",
        ),
        distractors=(
            "The {key} deploy got rolled back after {n} minutes.",
            "{ticket} was the last change to the {key}, it went fine.",
            "Can we freeze deploys to the {key} during the sale?",
        ),
        topic_words=("deploy", "change", "rollout"),
    ),
    _Family(
        name="bug_function",
        rare=_rare_function,
        keys=_keys(
            "flaky login test|intermittently failing sign-in check",
            "slow dashboard|sluggish metrics page",
            "memory spike at midnight|RAM jump at 00:00",
            "duplicate emails|messages going out twice",
            "broken CSV export|corrupted spreadsheet download",
        ),
        facts=(
            "Found it: the {key} was caused by {rare}, which runs twice per request.",
            "Root cause of the {key}: {rare} never closes its connection.",
        ),
        assistant_facts=("I traced the {key} to {rare}; it retries without backoff.",),
        rare_questions=("What problem did {rare} cause?", "Which bug was {rare} responsible for?"),
        paraphrase_questions=(
            "Which function was behind the {key_p}?",
            "What code was to blame for the {key_p}?",
        ),
        replies=(
            "Nice catch. Can you add a regression test?",
            "That explains a lot. Ship the fix behind a flag?",
        ),
        distractors=(
            "Still chasing the {key}; {fn} looks innocent so far.",
            "The {key} is back, I thought we fixed that.",
            "{name} thinks the {key} is a caching issue.",
        ),
        topic_words=("bug", "root cause", "fix"),
    ),
    _Family(
        name="env_var",
        rare=_rare_env,
        keys=_keys(
            "request timeout|how long calls wait before giving up",
            "retry budget|the number of retries allowed",
            "upload size limit|the maximum file size for uploads",
            "worker pool size|the number of parallel workers",
            "cache TTL|how long cached entries live",
        ),
        facts=(
            "{rare} is the env var that sets the {key}.",
            "To change the {key} in prod, edit {rare} in the deployment config.",
        ),
        assistant_facts=("The {key} comes from {rare}; the default applies when it's unset.",),
        rare_questions=("What does {rare} configure?", "What setting is {rare}?"),
        paraphrase_questions=(
            "Which environment variable controls {key_p}?",
            "What config variable do I change for {key_p}?",
        ),
        replies=(
            "Thanks. Is it documented anywhere besides the code?",
            "Noted. We should validate it at startup.",
        ),
        distractors=(
            "The {key} is hardcoded in two places, which is annoying.",
            "We bumped the {key} to {n} after the load test.",
            "{env} was renamed last release, it used to set the {key}.",
        ),
        topic_words=("env var", "config", "setting"),
    ),
    _Family(
        name="hotel",
        rare=_rare_compound,
        keys=_keys(
            "Porto|northern Portugal",
            "Kyoto|Japan's old capital",
            "Tbilisi|Georgia",
            "Oaxaca|southern Mexico",
            "Bergen|western Norway",
            "Seville|Andalusia",
        ),
        facts=(
            "In {key} we're staying at the {rare} hotel near the old town.",
            "Booked the {rare} guesthouse for {key}, breakfast included.",
        ),
        rare_questions=("Which city is the {rare} hotel in?", "Where is the {rare} guesthouse?"),
        paraphrase_questions=(
            "Where are we sleeping in {key_p}?",
            "What's our accommodation in {key_p}?",
        ),
        replies=(
            "Sounds great. Is it walkable to the center?",
            "Nice, breakfast included saves a lot of hassle.",
        ),
        distractors=(
            "Hotels in {key} are so expensive that week, maybe an apartment instead?",
            "{name} stayed at a hostel in {key} and loved it.",
            "We still need somewhere to stay in {key} for the last {n} nights.",
        ),
        topic_words=("hotel", "staying", "guesthouse"),
    ),
    _Family(
        name="birthday_gift",
        rare=_rare_compound,
        keys=_keys(
            "mom|mother",
            "partner|significant other",
            "nephew|sibling's son",
            "departing coworker|colleague who is leaving",
            "grandfather|grandpa",
        ),
        facts=(
            "For my {key} I ordered a {rare} {item} as a birthday gift, it arrives {weekday}.",
            "I finally picked a gift for my {key}: the {rare} {item}.",
        ),
        rare_questions=("Who is the {rare} order for?", "Who did I buy the {rare} thing for?"),
        paraphrase_questions=(
            "What birthday present did I get for my {key_p}?",
            "What present did I choose for my {key_p}?",
        ),
        replies=(
            "Lovely choice. Want a reminder to wrap it?",
            "That sounds thoughtful. Did you get a card too?",
        ),
        distractors=(
            "No idea what birthday gift to get my {key} this year.",
            "My {key} said they don't want another {item} for their birthday.",
            "{name} suggested a {item} as a birthday gift for my {key}.",
        ),
        topic_words=("birthday", "gift"),
    ),
    _Family(
        name="podcast",
        rare=_rare_compound,
        keys=_keys(
            "urban planning|how cities are designed",
            "the history of espionage|spies through the centuries",
            "fermentation|pickling and brewing at home",
            "deep sea biology|creatures of the ocean floor",
            "medieval trade|merchants in the Middle Ages",
        ),
        facts=(
            "The podcast I keep recommending is {rare}, it's all about {key}.",
            "You should listen to {rare}; every episode covers {key}.",
        ),
        rare_questions=("What's the {rare} podcast about?", "What topic does {rare} cover?"),
        paraphrase_questions=(
            "Which show did I recommend about {key_p}?",
            "What's the name of the series on {key_p}?",
        ),
        replies=(
            "Thanks, I'll add it to the queue. Any favorite episode?",
            "Sounds niche in a good way.",
        ),
        distractors=(
            "I listened to a long episode about {key} on the train.",
            "{name} wants to start a podcast about {key}.",
            "Is there a good podcast on {key} for beginners?",
        ),
        topic_words=("podcast", "episode", "listen"),
    ),
    _Family(
        name="backup_bucket",
        rare=_rare_bucket,
        keys=_keys(
            "user sessions|login records",
            "invoices|billing documents",
            "audit log|history of admin actions",
            "uploaded images|pictures customers sent us",
            "analytics events|tracking data",
        ),
        facts=(
            "Backups of the {key} go to the bucket {rare}.",
            "Nightly {key} snapshots land in {rare}, retention is ninety days.",
        ),
        assistant_facts=("I confirmed the {key} backups are written to {rare}.",),
        rare_questions=("What gets stored in {rare}?", "What data ends up in {rare}?"),
        paraphrase_questions=(
            "Where are the {key_p} backed up?",
            "Which storage location holds copies of the {key_p}?",
        ),
        replies=(
            "Good. Have we ever tested a restore from it?",
            "Noted. Is it encrypted at rest?",
        ),
        distractors=(
            "The {key} backup job failed twice this week.",
            "We park the {key} backups in {bucket} for now, that needs fixing.",
            "How long do we keep backups of the {key} around?",
        ),
        topic_words=("backup", "bucket", "snapshots"),
    ),
    _Family(
        name="git_branch",
        rare=_rare_branch,
        keys=_keys(
            "hotfix for invoice rounding|fix for cents being off on bills",
            "experiment with the new parser|trial of the rewritten parsing code",
            "dependency upgrades|library version bumps",
            "accessibility fixes|changes for screen reader users",
            "logging cleanup|tidying of log output",
        ),
        facts=(
            "My work on the {key} is on branch {rare}, not main.",
            "I pushed the {key} to {rare}; please don't rebase it.",
        ),
        rare_questions=("What's on branch {rare}?", "What work lives in {rare}?"),
        paraphrase_questions=("Where did I push the {key_p}?", "Which branch has the {key_p}?"),
        replies=("Thanks, I'll review it there.", "Ok. Want me to open a draft PR?"),
        distractors=(
            "The branch with the {key} conflicts with main again.",
            "{name} started the {key} on the {branch} branch but abandoned it.",
            "Can we squash the {key} commits before merging that branch?",
        ),
        topic_words=("branch", "main", "rebase"),
    ),
    _Family(
        name="support_case",
        rare=_rare_ticket("SR", 6),
        keys=_keys(
            "swollen laptop battery|bulging notebook power pack",
            "dishwasher that won't drain|dish machine full of water",
            "double charge on my card|being billed twice",
            "broken fridge door seal|refrigerator not closing",
            "missing parcel|delivery that never arrived",
        ),
        facts=(
            "Support opened case {rare} for the {key}.",
            "Case {rare} is about the {key}; they promised a call back.",
        ),
        rare_questions=("What is case {rare} about?", "What did I report in {rare}?"),
        paraphrase_questions=(
            "What's the ticket number for the {key_p}?",
            "Which support reference do I quote about the {key_p}?",
        ),
        replies=(
            "Keep that handy. Support lines love asking for it.",
            "Hope they sort it quickly.",
        ),
        distractors=(
            "Still waiting on support to reply about the {key}.",
            "{name} had the same {key} last year, took weeks to fix.",
            "Should I escalate the {key} with support or give them another week?",
        ),
        topic_words=("support", "case"),
    ),
    _Family(
        name="language_tutor",
        rare=_rare_person,
        keys=_keys(
            "Portuguese|language of Brazil",
            "Japanese|language spoken in Tokyo",
            "Finnish|language of Helsinki",
            "Korean|language of Seoul",
            "Greek|language of Athens",
            "Turkish|language of Istanbul",
        ),
        facts=(
            "My {key} tutor is {rare}, we meet on {weekday}s.",
            "I started {key} lessons with {rare}, an online tutor.",
        ),
        rare_questions=("What language does {rare} teach me?", "What am I learning with {rare}?"),
        paraphrase_questions=(
            "Who helps me practice the {key_p}?",
            "Who is my teacher for the {key_p}?",
        ),
        replies=(
            "How exciting. Are you focusing on conversation or grammar?",
            "Nice, weekly lessons really help consistency.",
        ),
        distractors=(
            "My {key} vocabulary app streak broke at {n} days.",
            "{name} speaks {key} fluently and offered to help with lessons.",
            "The {key} grammar is killing me this week.",
        ),
        topic_words=("tutor", "lessons", "language"),
    ),
    _Family(
        name="ssh_key",
        rare=_rare_ssh_key,
        keys=_keys(
            "work laptop|company notebook",
            "home server|box in my closet",
            "Raspberry Pi|tiny single-board computer",
            "cloud VM|rented virtual machine",
            "NAS|network storage box",
        ),
        facts=(
            "The SSH key for my {key} is {rare}, its passphrase is in the manager.",
            "I generated {rare} just for the {key}.",
        ),
        rare_questions=("Which machine uses the key {rare}?", "What is {rare} for?"),
        paraphrase_questions=(
            "Which key file do I use for the {key_p}?",
            "What identity logs me into the {key_p}?",
        ),
        replies=(
            "Good practice to keep them separate.",
            "Noted. Add it to your ssh config so you don't pass it every time.",
        ),
        distractors=(
            "Can't log into my {key} over SSH, the key gets permission denied again.",
            "I wiped my {key} and need to set up a new SSH key.",
            "{name} wants SSH key access to my {key} for the weekend.",
        ),
        topic_words=("SSH", "key"),
    ),
    _Family(
        name="restaurant",
        rare=_rare_compound,
        keys=_keys(
            "anniversary dinner|celebration of our wedding date",
            "team offsite dinner|company outing meal",
            "dad's retirement|father stopping work",
            "graduation|finishing university",
            "engagement party|celebration of the proposal",
        ),
        facts=(
            "We booked {rare} for the {key}, table for {n} at eight.",
            "The {key} is at {rare}, that place by the river.",
        ),
        rare_questions=(
            "What's the {rare} reservation for?",
            "What are we celebrating at {rare}?",
        ),
        paraphrase_questions=(
            "Where are we eating for the {key_p}?",
            "Which restaurant did we pick for the {key_p}?",
        ),
        replies=(
            "Sounds lovely. Do they need a deposit?",
            "Great choice. Should I remind you to confirm the day before?",
        ),
        distractors=(
            "We still need a restaurant for the {key}.",
            "{name} suggested a tapas place for the {key}.",
            "Is a table for {n} people too many for the {key}?",
        ),
        topic_words=("table", "restaurant", "booked"),
    ),
    _Family(
        name="insurance_policy",
        rare=_rare_ticket("POL", 6),
        keys=_keys(
            "renter's insurance|apartment contents cover",
            "travel insurance|coverage for trips abroad",
            "pet insurance|vet bill coverage",
            "bike insurance|bicycle theft coverage",
            "phone insurance|handset protection",
        ),
        facts=(
            "My {key} policy is {rare}, filed under paperwork.",
            "The {key} renewed, policy {rare}, same premium as last year.",
        ),
        rare_questions=("What does policy {rare} cover?", "Which insurance is {rare}?"),
        paraphrase_questions=(
            "What's the policy number for my {key_p}?",
            "Which reference do I give when claiming on my {key_p}?",
        ),
        replies=(
            "Noted, that'll save you digging through emails.",
            "Good. Check whether the deductible changed.",
        ),
        distractors=(
            "The premium on my {key} policy went up by {n} percent.",
            "Does my {key} policy cover accidental damage?",
            "{name} switched {key} providers and got a cheaper policy.",
        ),
        topic_words=("policy", "premium", "insurance"),
    ),
    _Family(
        name="alert_name",
        rare=_rare_alert,
        keys=_keys(
            "p99 latency|slowest requests",
            "error rate|share of failing calls",
            "queue depth|backlog of pending jobs",
            "disk usage|how full the volumes are",
            "replication lag|how far the replica is behind",
        ),
        facts=(
            "The alert {rare} fires when the {key} crosses the threshold.",
            "{rare} is the page for {key}, it goes to the primary on-call.",
        ),
        assistant_facts=("I set up {rare} to page when the {key} stays high for ten minutes.",),
        rare_questions=("What does the {rare} alert watch?", "What triggers {rare}?"),
        paraphrase_questions=(
            "Which alert tells us about the {key_p}?",
            "What's the name of the alarm for {key_p}?",
        ),
        replies=(
            "Good. Is the threshold tuned or still a guess?",
            "Thanks, I'll link the runbook from it.",
        ),
        distractors=(
            "The {key} alert graph looked weird after the deploy.",
            "The {alertname} alert fired for {key} at 3am, false alarm.",
            "We need a dashboard panel and an alert for {key}.",
        ),
        topic_words=("alert", "page", "threshold"),
    ),
    _Family(
        name="mountain_hut",
        rare=_rare_compound,
        keys=_keys(
            "Dolomites trip|Italian mountain trek",
            "Pyrenees hike|walk between France and Spain",
            "Highlands trek|Scotland walking holiday",
            "Tatra hike|Polish mountain outing",
            "Lake District walk|English lakes ramble",
        ),
        facts=(
            "On the {key} we sleep at the {rare} hut on night two.",
            "For the {key}, the {rare} refuge has our reservation.",
        ),
        rare_questions=(
            "Which trip includes the {rare} hut?",
            "Which trek is the {rare} refuge part of?",
        ),
        paraphrase_questions=(
            "Where do we stay overnight on the {key_p}?",
            "Which mountain shelter did we book for the {key_p}?",
        ),
        replies=(
            "Great, huts fill up fast. Do they take cards?",
            "Noted. Pack a sleeping bag liner.",
        ),
        distractors=(
            "I'm planning the route for the {key}, {n} kilometers a day seems ambitious.",
            "{name} did the {key} last year in the rain.",
            "Need new boots before the {key}.",
        ),
        topic_words=("hut", "hike", "trek"),
    ),
    _Family(
        name="package_tracking",
        rare=_rare_tracking,
        keys=_keys(
            "new monitor|display for my desk",
            "standing desk|height-adjustable table",
            "espresso machine|coffee maker",
            "mechanical keyboard|clicky typing board",
            "office chair|seat for my workspace",
        ),
        facts=(
            "Tracking for the {key} is {rare}, supposedly arriving today.",
            "The {key} shipped; tracking is {rare}.",
        ),
        rare_questions=("What's in shipment {rare}?", "What is {rare} the tracking for?"),
        paraphrase_questions=(
            "How do I follow the delivery of the {key_p}?",
            "What's the parcel number for the {key_p}?",
        ),
        replies=(
            "Nice, hope it arrives before the weekend.",
            "Noted. Carriers love leaving things with neighbors.",
        ),
        distractors=(
            "The {key} I ordered arrived with a dent, delivery was rough.",
            "Thinking of returning the {key}, it's too big.",
            "{name} recommended a {key} that's half the price, but delivery takes weeks.",
        ),
        topic_words=("delivery", "tracking", "shipped"),
    ),
    _Family(
        name="service_port",
        rare=_rare_digits(10000, 65000),
        keys=_keys(
            "metrics exporter|stats endpoint",
            "admin UI|management dashboard",
            "gRPC gateway|RPC front door",
            "debug profiler|profiling endpoint",
            "webhook receiver|callback listener",
        ),
        facts=(
            "The {key} listens on port {rare}.",
            "Remember the {key} moved to port {rare} after the conflict.",
        ),
        assistant_facts=("The {key} is bound to port {rare} in the compose file.",),
        rare_questions=("Which service uses port {rare}?", "What runs on {rare}?"),
        paraphrase_questions=(
            "What port is the {key_p} on?",
            "Where do I point my browser for the {key_p}?",
        ),
        replies=(
            "Noted. Is it exposed outside the cluster?",
            "Thanks, I'll update the firewall rule.",
        ),
        distractors=(
            "The {key} crashed on startup, the port was already in use.",
            "Should the {key} port be behind auth?",
            "{name} changed the {key} port config yesterday.",
        ),
        topic_words=("port", "listens"),
    ),
)


# ---------------------------------------------------------------- filler

# Leads and tails pad facts to filler length; filler uses them too, so they are no tell.
_LEADS = (
    "Quick note before I forget.", "Oh, and one more thing.", "Unrelated, but worth writing down.",
    "Side note.", "Before we continue, one thing.", "For future reference:", "Small detail.",
    "Also, while I think of it.", "Random thing:", "Separately, one thing.", "Jotting this down.",
    "Okay, switching gears for a second.",
)  # fmt: skip
_TAILS = (
    "Anyway, back to what we were doing.", "No action needed right now.",
    "Just so it's written down somewhere.", "We can pick up the other thread after.",
    "Not urgent at all.", "That's all on that front.", "Moving on.",
    "It came up earlier and I didn't want to lose it.", "Nothing else changed there.",
)  # fmt: skip
_ASSISTANT_TAILS = (
    "Let me know if you want that documented.", "Tell me if anything there looks off.",
    "Happy to dig into it further if needed.", "I can add it to the notes if useful.",
)  # fmt: skip
_USER_ACKS = (
    "Perfect, thanks.", "Great, that's what I needed.", "Okay, good to know.",
    "Thanks, noted.", "Makes sense, thank you.", "Got it.",
)  # fmt: skip
_OPENERS = (
    "Good question.", "That's a common problem.", "Fair point.", "Makes sense.",
    "Okay, a few thoughts.", "Short answer: it depends.", "I've seen this a lot.",
    "Here's how I'd approach it.", "Two things come to mind.", "Honestly, that's reasonable.",
    "Right.", "Happy to help with that.", "Good instinct.", "That tracks.", "Sure.", "Ah, yes.",
    "Let's think it through.", "Understandable.",
)  # fmt: skip
_CLOSERS = (
    "Want me to put that on the list?", "Let me know how it goes.",
    "Happy to go deeper on any of this.", "Does that help?", "Shall I draft next steps?",
    "Tell me if you want a second opinion.",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Topic:
    """Filler sentences for one everyday or agentic topic, per speaker."""

    user: tuple[str, ...]
    assistant: tuple[str, ...]


_TOPICS: tuple[_Topic, ...] = (
    _Topic(  # travel
        user=(
            "Thinking about a long weekend in {city} in {month}, any ideas?",
            "Train or flight to {city}? The train is {n} euros cheaper but takes all day.",
            "I need to renew my passport before the {city} trip.",
            "{name} recommended a tiny hotel in {city} near the station.",
            "Packing for {city} is hard when the forecast keeps changing.",
            "What's a reasonable daily budget for food in {city}?",
            "My {relative} wants to join the trip to {city}, which complicates the rooms.",
            "The layover in {city2} is {n} hours, is that enough to leave the airport?",
            "I keep forgetting plug adapters when I travel, remind me this time.",
        ),
        assistant=(
            "For {city} in {month}, book early and stay near the center so you can walk.",
            "The train is usually worth it if you can work on board; flights add transfer time.",
            "A {n}-hour layover is enough to see a bit of {city2} if your bags are checked.",
            "Passport renewals can take weeks, so it's worth starting that now.",
            "Pack layers and a light rain jacket; the weather in {month} can swing a lot.",
            "Markets and lunch menus keep food costs down in most cities, {city} included.",
        ),
    ),
    _Topic(  # cooking
        user=(
            "Tried making {dish} with {ingredient} last night and it actually worked.",
            "What can I cook with leftover {ingredient} and some rice?",
            "{name} is coming for dinner on {weekday}, thinking {dish}.",
            "My {dish} always comes out a bit bland, what am I missing?",
            "Is it worth buying a pressure cooker for {dish}?",
            "I burned the garlic again, the whole kitchen smells.",
            "Meal prepping {dish} for the week, {n} portions.",
            "Do you have a quick weeknight idea that isn't pasta?",
        ),
        assistant=(
            "Bland food usually needs more salt and some acid; lemon at the end goes a long way.",
            "{ingredient} pairs well with rice; fry it briefly first so it releases more flavor.",
            "For {dish}, brown everything properly before adding liquid, that's where depth comes.",
            "A pressure cooker is great for beans and stews, less so for quick stir-fries.",
            "Meal prep keeps better if you store sauces separately and combine when reheating.",
            "A sheet-pan dinner with vegetables and chickpeas is fast and hard to mess up.",
        ),
    ),
    _Topic(  # code review
        user=(
            "Can you look at my change to {component}? The diff is about {n} lines.",
            "I'm not sure {component} should live in the same module as the handlers.",
            "The reviewer asked me to split {file} into two files, is that overkill?",
            "{name} left {n} comments on my PR, mostly about naming.",
            "Should I add type hints to {component} before refactoring it?",
            "The tests for {component} pass locally but fail in CI.",
            "I renamed a bunch of things in {file}, hope it doesn't break imports.",
            "Is it fine to merge with one approval if the change is small?",
        ),
        assistant=(
            "Splitting makes sense if the halves change for different reasons; else it's churn.",
            "Type hints first is a good idea, they make the refactor safer and the review easier.",
            "Local-versus-CI failures are often ordering or environment issues; check the seeds.",
            "Naming comments are worth taking seriously, names are most of what reviewers read.",
            "For a small change one approval is usually fine, as long as tests cover it.",
            "I'd keep {component} apart from the handlers so you can test it without a server.",
        ),
    ),
    _Topic(  # deployments
        user=(
            "Deploying {service} this afternoon, fingers crossed.",
            "The rollout of {service} is stuck at {n} percent.",
            "Do we deploy on Fridays or is that still banned?",
            "{name} wants a canary for {service} before the full rollout.",
            "The helm chart for {service} has drifted from what's in production.",
            "The rollback took {n} minutes, way too long.",
            "Can we automate the database migration step in the deploy pipeline?",
            "Blue-green for {service} doubles the cost during the switch, worth it?",
        ),
        assistant=(
            "A canary with automatic rollback on error rate is cheap insurance.",
            "If the rollout is stuck, check the readiness probes; new pods may never report ready.",
            "Friday deploys are fine with good rollback, but most teams avoid them anyway.",
            "Migrations in the pipeline work if they stay backward compatible with the old code.",
            "Blue-green costs more briefly, but rollback becomes a traffic switch, not a redeploy.",
            "Config drift usually means someone patched production by hand; reconcile it first.",
        ),
    ),
    _Topic(  # debugging
        user=(
            "{service} throws a timeout every few hours and I can't reproduce it.",
            "Added logging around {component} and the bug disappeared, classic.",
            "Bisecting now, {n} commits left to check.",
            "Why would {fn} return None only in production?",
            "The stack trace points at {file} but that code hasn't changed in months.",
            "Memory climbs slowly on {host} until the process restarts.",
            "I think there's a race condition in {component}.",
            "Tests are green but the staging box logs errors every minute.",
        ),
        assistant=(
            "Intermittent timeouts often come from pool exhaustion; log pool stats when they hit.",
            "If logging hides the bug, timing is involved; look for state shared between requests.",
            "A slow memory climb is usually an unbounded cache; check what grows with traffic.",
            "Old code failing suddenly often means the inputs changed, not the code.",
            "Races show up more under load; a stress test with many threads can reproduce it.",
            "Bisect with an automated test script gets you there faster than checking by hand.",
        ),
    ),
    _Topic(  # fitness
        user=(
            "Did {exercise} this morning and my legs are done.",
            "Aiming for {n} kilometers this week, last week was a mess.",
            "Should I do {exercise} on consecutive days?",
            "{name} invited me to a climbing gym on {weekday}.",
            "My lower back aches after {exercise}, is my form off?",
            "Trying to sleep more before my long runs.",
            "The gym is packed after work, thinking of going at {hour} instead.",
            "Is stretching before running actually useful?",
        ),
        assistant=(
            "Back pain after lifting usually points to form or fatigue; film a set and check.",
            "Hard days in a row on the same muscles slow recovery; alternate heavy and light.",
            "Dynamic warm-ups beat static stretching before a run.",
            "Sleep is the most underrated training tool, you're right to prioritize it.",
            "Early sessions are quieter and make consistency easier once the habit sticks.",
            "Increase weekly distance gradually, around ten percent, to avoid injuries.",
        ),
    ),
    _Topic(  # books
        user=(
            "Just finished a {genre} book that {name} recommended, loved the ending.",
            "I can't get into {genre} lately, everything feels the same.",
            "Any {genre} suggestions for a long flight?",
            "Our book club picked a huge novel for next month.",
            "I keep starting books and not finishing them.",
            "Reading on the e-reader at night helps me sleep better than my phone.",
            "Used bookshops in {city} are dangerous for my wallet.",
            "I want to read more non-fiction this year.",
        ),
        assistant=(
            "If a genre feels stale, try its classics or something translated.",
            "For long flights, something plot-driven works better than dense prose.",
            "Dropping books you don't enjoy is fine; life is too short for obligation reading.",
            "A chapter a day gets through big books faster than you'd think.",
            "Non-fiction is easier to stick with if you pick topics you already argue about.",
            "Book clubs are great for finishing books you'd abandon alone.",
        ),
    ),
    _Topic(  # finances
        user=(
            "Trying to budget better, groceries were {amount} last month.",
            "Should I pay down the credit card or build savings first?",
            "My rent goes up by {n} percent in {month}.",
            "{name} keeps telling me to invest in index funds.",
            "Taxes are due soon and my receipts are a mess.",
            "Subscriptions are eating my budget, time for a purge.",
            "Is it dumb to keep cash in a savings account with low interest?",
            "I want to save for a trip without feeling broke.",
        ),
        assistant=(
            "High-interest debt usually comes first; its interest beats most savings returns.",
            "A small automatic transfer right after payday makes saving feel painless.",
            "Index funds are a reasonable default for long-term money you won't touch.",
            "Scan receipts as they arrive; a folder per month saves the tax-season panic.",
            "List every subscription with its monthly cost; the total is usually a surprise.",
            "An emergency buffer in savings is about safety, not returns.",
        ),
    ),
    _Topic(  # planning
        user=(
            "My week is overloaded, {n} meetings before {weekday}.",
            "Help me plan the weekend, I have errands and want some rest.",
            "I keep underestimating how long tasks take.",
            "Need to prepare slides for {weekday} and haven't started.",
            "{name} asked me to organize the team lunch.",
            "Trying time blocking again, third attempt this year.",
            "Should I move the dentist appointment or the call with {name}?",
            "I want a to-do system that doesn't collapse after a week.",
        ),
        assistant=(
            "Put the errands in one block on Saturday morning and protect Sunday for rest.",
            "Estimates improve if you track actual time for a week and compare.",
            "Start the slides with the one message you want people to remember.",
            "Time blocking works better with buffer blocks; plans without slack break early.",
            "A simple list reviewed every morning beats a complex system you abandon.",
            "Move whichever one is easier to reschedule; calls usually are.",
        ),
    ),
    _Topic(  # home
        user=(
            "The {room} tap is dripping again.",
            "Thinking of painting the {room} a darker color.",
            "Our {device} stopped working right after the warranty ended.",
            "The landlord still hasn't fixed the heating in the {room}.",
            "Need shelves for the {room}, going to {store} on {weekday}.",
            "Mold keeps coming back in the bathroom corner.",
            "Is it worth fixing an old {device} or just replacing it?",
            "{name} is helping me move the couch on {weekday}.",
        ),
        assistant=(
            "A dripping tap is usually a worn washer, a cheap fix with the water turned off.",
            "Dark colors work well in rooms with good light; test a patch first.",
            "Recurring mold points to ventilation; run the fan longer after showers.",
            "Repair is worth it if the part costs less than a third of a replacement.",
            "Measure twice before buying shelves, especially around alcoves.",
            "Put the heating request in writing so there's a record.",
        ),
    ),
    _Topic(  # family
        user=(
            "My {relative} is visiting next weekend, I need to clean.",
            "Calling my {relative} tonight, it's been a while.",
            "My {relative}'s birthday is coming up and I have no ideas.",
            "My {relative} moved closer to {city}, so visits are easier now.",
            "The family group chat is chaos over the holiday plans.",
            "My {relative} wants to learn to use a smartphone properly.",
            "We're hosting {n} relatives for the holidays, somehow.",
            "My {relative} keeps sending me articles about {city}.",
        ),
        assistant=(
            "A short call regularly beats a long one rarely; people mostly want to hear from you.",
            "For teaching a smartphone, written steps on paper help more than demos.",
            "Hosting many people is easier with a simple menu and a shared task list.",
            "For birthday ideas, think about something they mentioned wanting recently.",
            "Group chats calm down when one person proposes a concrete plan.",
            "Visits are easier to enjoy if you don't over-plan the days.",
        ),
    ),
    _Topic(  # pets
        user=(
            "The cat knocked a glass off the table at {hour} in the morning.",
            "Dog training is going slowly, he still pulls on the leash.",
            "Vet visit on {weekday}, vaccination boosters.",
            "{name} asked me to feed her cat while she's in {city}.",
            "Is grain-free food actually better for dogs?",
            "The neighbor's dog barks whenever I'm on a call.",
            "Our hamster escaped and we found him in the laundry basket.",
            "Thinking of adopting a second cat.",
        ),
        assistant=(
            "Leash pulling improves if you stop every time the leash tightens; be consistent.",
            "Grain-free isn't better for most dogs; ask the vet before switching.",
            "Introduce a second cat slowly, separate rooms for a few days first.",
            "Cats knock things over for attention; a play session before bed helps.",
            "Keep the vaccination record handy, boarding places ask for it.",
            "White noise near the door can reduce barking triggers.",
        ),
    ),
    _Topic(  # health
        user=(
            "Slept badly again, woke up at {hour} and couldn't fall back asleep.",
            "Trying to drink less coffee after noon.",
            "Got my flu shot on {weekday}.",
            "My eyes hurt after long days at the monitor.",
            "{name} recommended a physio for my shoulder.",
            "Should I get a standing desk for my back?",
            "Trying to walk {n} minutes every day.",
            "Allergy season is brutal this year.",
        ),
        assistant=(
            "For eye strain, every twenty minutes look at something far away for a few seconds.",
            "Caffeine lingers for hours, so cutting it after noon often helps sleep.",
            "Alternating sitting and standing beats standing all day.",
            "Daily walks add up; consistency matters more than intensity.",
            "If you wake up at night, avoid screens and keep the lights dim.",
            "Start antihistamines before peak season for a better effect.",
        ),
    ),
    _Topic(  # music and films
        user=(
            "Watched a {genre_film} film last night, the soundtrack was great.",
            "Learning {instrument} is harder than I expected.",
            "{name} got tickets for a concert in {city}.",
            "Any series recommendations for a rainy weekend?",
            "I've listened to the same album {n} times this week.",
            "The cinema near me closed, which is sad.",
            "Practicing {instrument} for {n} minutes a day now.",
            "Documentaries are my new comfort watch.",
        ),
        assistant=(
            "Short daily practice beats long weekly sessions for any instrument.",
            "For a rainy weekend, a limited series you can finish feels satisfying.",
            "Soundtracks are a good way to discover composers you'd otherwise miss.",
            "Concerts in {city} tend to sell out fast, good that {name} was quick.",
            "Repeat listening usually means the album hits something, enjoy it.",
            "Independent cinemas survive on memberships; worth supporting if a new one opens.",
        ),
    ),
    _Topic(  # learning
        user=(
            "Doing a course on {lang}, chapter {n}.",
            "Flashcards are working better than I expected for vocabulary.",
            "I want to learn statistics properly this year.",
            "{name} and I started a study group on {weekday}s.",
            "Struggling to find time to practice.",
            "The online course is {n} hours and I'm at the halfway point.",
            "Should I learn {lang} or go deeper into what I already know?",
            "Teaching something to someone else really shows the gaps.",
        ),
        assistant=(
            "Spaced repetition is one of the few study techniques with solid evidence.",
            "Study groups work when each session has a small concrete goal.",
            "Going deeper usually pays more than breadth, unless a new tool unlocks your work.",
            "Explaining to others exposes gaps quickly, keep doing it.",
            "Fifteen focused minutes a day beats an occasional long session.",
            "For statistics, work through problems by hand before using software.",
        ),
    ),
    _Topic(  # shopping
        user=(
            "Need a new {device}, mine is dying.",
            "Is it worth buying the more expensive {device} for the warranty?",
            "Returned the jacket, the sizing was off.",
            "{store} has a sale until {weekday}.",
            "Buying winter boots, budget around {amount}.",
            "I ordered too many things online this month.",
            "Refurbished {device}: good idea or gamble?",
            "Looking for something under {amount} for {name}.",
        ),
        assistant=(
            "Refurbished from the manufacturer is usually a safe bet, with a proper warranty.",
            "Extended warranties rarely pay off, but check what the base warranty covers.",
            "A 24-hour rule before online purchases cuts impulse buys a lot.",
            "For boots, try them on late in the day when your feet are larger.",
            "Read the return policy before buying clothes online.",
            "Something small and thoughtful usually lands better than an expensive generic item.",
        ),
    ),
    _Topic(  # infrastructure
        user=(
            "{host} is running out of disk again.",
            "Should we move {service} to its own node pool?",
            "Certificate renewal on {host} failed this morning.",
            "Terraform wants to recreate {n} resources, scary.",
            "{name} set up a new monitoring dashboard for {service}.",
            "Latency on {service} doubled after the region move.",
            "Patching {host} tonight, expect a short blip.",
            "The load balancer health checks are flapping.",
        ),
        assistant=(
            "Before applying a plan that recreates resources, check for renamed modules.",
            "Flapping health checks often mean the timeout is too tight for slow starts.",
            "A separate node pool helps if the service has different resource needs.",
            "Disk filling repeatedly needs log rotation or a retention policy, not more cleanup.",
            "Latency after a region move often comes from a dependency left in the old region.",
            "Automate certificate checks so you hear about failures before expiry.",
        ),
    ),
    _Topic(  # meetings and work
        user=(
            "Standup ran long again, {n} minutes.",
            "{name} wants a one-on-one on {weekday}.",
            "Preparing for the quarterly review.",
            "Too many meetings this week to get real work done.",
            "The roadmap discussion went in circles.",
            "Need to write the hiring rubric by {weekday}.",
            "Our team offsite is in {city} this year.",
            "Writing the weekly update and I have little to report.",
        ),
        assistant=(
            "Standups stay short when blockers are taken offline right away.",
            "For a review, lead with outcomes and numbers, then the story.",
            "Block focus time on your calendar before meetings fill it.",
            "Roadmap talks converge faster with a written proposal to react to.",
            "A rubric with examples of strong and weak answers makes interviews fairer.",
            "Weekly updates can include what you learned or unblocked, not only what shipped.",
        ),
    ),
    _Topic(  # gardening
        user=(
            "The {plant} finally have flowers.",
            "Slugs ate half of my {plant}.",
            "When should I repot the {plant}?",
            "Balcony gardening is harder with the wind up here.",
            "{name} gave me cuttings from her {plant}.",
            "Watering every {n} days seems too often.",
            "Trying compost this year, the bin already smells.",
            "Frost is coming on {weekday}, should I cover the {plant}?",
        ),
        assistant=(
            "Cover tender plants with fleece overnight when frost is forecast.",
            "Beer traps and copper tape help against slugs without chemicals.",
            "Repot in spring, when growth starts, one size up.",
            "A smelly compost bin usually needs more browns, like cardboard or dry leaves.",
            "Water deeply and less often so the roots grow down.",
            "A trellis as a windbreak makes a big difference on balconies.",
        ),
    ),
    _Topic(  # security
        user=(
            "Finally set up a password manager for the family.",
            "Got a phishing email that looked really convincing.",
            "Should we rotate the API keys every quarter?",
            "{name} reused a password from a leaked site.",
            "Enabling two-factor everywhere this weekend.",
            "The secrets in the {service} config are still plain text.",
            "Our vault audit is due in {month}.",
            "Is a passkey better than a long password?",
        ),
        assistant=(
            "Passkeys resist phishing better than passwords, worth enabling where supported.",
            "Rotation matters most for keys that are shared or exposed; automate it if you can.",
            "Move secrets out of plain-text config into a secret store and inject them at runtime.",
            "A family password manager makes sharing safer than texting passwords around.",
            "Report the phishing attempt; others likely got it too.",
            "Start two-factor with email and banking, they protect everything else.",
        ),
    ),
    _Topic(  # agentic tasks
        user=(
            "Can you run {tool} on the repo and summarize the output?",
            "Please open {file} and check the error handling.",
            "Write a quick script to rename the {n} files in the export folder.",
            "Search the logs for {ticket} and tell me what you find.",
            "Draft a reply to {name} about the delay.",
            "Check whether {service} has any open alerts right now.",
            "Summarize the last {n} commits on {branch} for the changelog.",
            "Compare the config on {host} with the one in the repo.",
        ),
        assistant=(
            "I ran {tool}; there are {n} warnings, mostly unused imports.",
            "I opened {file}: errors are caught but swallowed without logging.",
            "Plan: list the files, build the new names, dry-run, then rename.",
            "The logs mention {ticket} {n} times, all from {host}.",
            "Draft: Hi {name}, thanks for your patience, we expect to finish by {weekday}.",
            "The config on {host} differs in two keys: timeouts and the log level.",
        ),
    ),
)


@functools.lru_cache(maxsize=16384)
def _tokens(text: str) -> int:
    """Estimate BPE tokens without a tokenizer: long words and digit runs split into pieces."""
    total = 0
    for piece in _PIECES.findall(text):
        if piece.isdigit():
            total += (len(piece) + 2) // 3
        elif len(piece) > 7:
            total += 2
        else:
            total += 1
    return total


def _filler(rng: random.Random, topic: _Topic, role: str) -> str:
    """A filler turn of a few topic sentences, trimmed to filler length."""
    sentences = topic.user if role == USER else topic.assistant
    target = rng.randint(_MIN_TOKENS + 4, _MAX_TOKENS - 12)
    parts: list[str] = []
    if role == USER and rng.random() < 0.2:
        parts.append(rng.choice(_LEADS))
    elif role == ASSISTANT and rng.random() < 0.6:
        # Assistant sentences carry few slots; openers keep whole turns from repeating.
        parts.append(rng.choice(_OPENERS))
    for template in rng.sample(sentences, k=4):
        parts.append(_fill(rng, template))
        if sum(map(_tokens, parts)) >= target:
            break
    if role == ASSISTANT and rng.random() < 0.3:
        parts.append(rng.choice(_CLOSERS))
    elif role == USER and rng.random() < 0.2:
        parts.append(rng.choice(_TAILS))
    while sum(map(_tokens, parts)) > _MAX_TOKENS and len(parts) > 1:
        parts.pop()
    return " ".join(parts)


def _pad(rng: random.Random, core: str, *, role: str, lead: bool = True) -> str:
    """Pad a planted line to filler length, the way people bundle several things in a message.

    Padding mixes neutral tails with sentences from random filler topics; filler uses the same
    leads and tails, so neither the padding nor the length marks a turn as planted.
    """
    parts = [rng.choice(_LEADS), core] if lead and role == USER and rng.random() < 0.25 else [core]
    total = sum(map(_tokens, parts))  # estimates add up: no piece spans the joining space
    tails = list(_TAILS if role == USER else _ASSISTANT_TAILS + _CLOSERS)
    rng.shuffle(tails)
    target = rng.randint(_MIN_TOKENS, _MAX_TOKENS - 16)
    for _ in range(20):  # bounded: a candidate that would overshoot is skipped, not retried forever
        if total >= target:
            break
        if tails and rng.random() < 0.3:
            extra = tails.pop()
        else:
            topic = rng.choice(_TOPICS)
            extra = _fill(rng, rng.choice(topic.user if role == USER else topic.assistant))
        if total + _tokens(extra) <= _MAX_TOKENS:
            parts.append(extra)
            total += _tokens(extra)
    return " ".join(parts)


# ---------------------------------------------------------------- assembly


@dataclass(frozen=True, slots=True)
class _Plant:
    """One planted fact: its family, key, rare token and how its question is asked."""

    family: _Family
    key: tuple[str, str]
    token: str
    core: str
    shares: bool
    assistant_voice: bool

    @property
    def fixed(self) -> dict[str, str]:
        return {"key": self.key[0], "key_p": self.key[1], "rare": self.token}


@functools.cache
def _vocabulary() -> str:
    """All fixed template and pool text, lower case: a rare core must not occur in it."""
    texts: list[str] = [*_LEADS, *_TAILS, *_ASSISTANT_TAILS, *_USER_ACKS, *_OPENERS, *_CLOSERS]
    for pool in _POOLS.values():
        texts.extend(pool)
    for topic in _TOPICS:
        texts.extend(topic.user + topic.assistant)
    for family in _FAMILIES:
        texts.extend(family.facts + family.assistant_facts + family.rare_questions)
        texts.extend(family.paraphrase_questions + family.replies + family.distractors)
        texts.extend(key + " " + para for key, para in family.keys)
    return "\n".join(texts).lower()


def _choose_plants(rng: random.Random, count: int) -> list[_Plant]:
    # Each family once per conversation while they last, so questions vary; beyond that a
    # family repeats with an unused key (and an unused paraphrase, so questions stay unambiguous).
    order = rng.sample(_FAMILIES, k=len(_FAMILIES))
    families = [order[i % len(order)] for i in range(count)]
    shares = [True] * (count // 2) + [False] * (count - count // 2)
    rng.shuffle(shares)
    used_paras: dict[str, set[str]] = {}
    cores: list[str] = []
    plants: list[_Plant] = []
    for family, share in zip(families, shares, strict=True):
        taken = used_paras.setdefault(family.name, set())
        free = [key for key in family.keys if key[1] not in taken]
        if not free:
            raise ValueError(f"too many questions: family {family.name} ran out of keys")
        key = rng.choice(free)
        taken.add(key[1])
        token, core = _draw_rare(rng, family.rare, cores)
        cores.append(core)
        voice = bool(family.assistant_facts) and rng.random() < 0.3
        plants.append(_Plant(family, key, token, core, share, voice))
    return plants


def _draw_rare(rng: random.Random, make: _Rare, cores: list[str]) -> tuple[str, str]:
    vocabulary = _vocabulary()
    for _ in range(1000):
        token, core = make(rng)
        clash = any(core in other or other in core for other in cores)
        if len(core) >= 4 and core not in vocabulary and not clash:
            return token, core
    raise RuntimeError("could not draw a unique rare token")  # pragma: no cover


def _free_slot(rng: random.Random, used: list[bool], parity: int, end: int) -> int:
    """A random index ``i < end - 1`` of the given parity with ``i`` and ``i + 1`` both free."""
    free = [i for i in range(parity, end - 1, 2) if not used[i] and not used[i + 1]]
    if not free:
        raise ValueError("too many questions for the number of turns")
    index = rng.choice(free)
    used[index] = used[index + 1] = True
    return index


def _sessions(rng: random.Random, turns: int) -> list[int]:
    """The session number of each turn: 8-15 bursts that start on a user turn."""
    count = max(1, min(rng.randint(8, 15), turns // 4))
    pairs = (turns + 1) // 2
    # Stratified cut points with jitter below half a stratum: sizes vary, none is empty.
    stride = pairs / count
    cuts = [round(k * stride + rng.uniform(-0.3, 0.3) * stride) for k in range(1, count)]
    sessions: list[int] = []
    current = 0
    for pair in range(pairs):
        while current < len(cuts) and pair >= cuts[current]:
            current += 1
        sessions.extend((current, current))
    return sessions[:turns]


def _timestamps(rng: random.Random, sessions: list[int], start: datetime) -> list[datetime]:
    """Turns minutes apart within a session; sessions hours to days apart."""
    times: list[datetime] = []
    now = start
    for index, session in enumerate(sessions):
        if index > 0 and session != sessions[index - 1]:
            hours = rng.uniform(2, 14) if rng.random() < 0.4 else rng.uniform(18, 96)
            now += timedelta(seconds=round(hours * 3600))
        elif index % 2 == 1:  # the assistant answers within seconds
            now += timedelta(seconds=rng.randint(4, 60))
        elif index > 0:  # the user reads, thinks, types
            now += timedelta(seconds=rng.randint(30, 420))
        times.append(now)
    return times


def generate_conversation(
    seed: int, *, turns: int = 600, questions: int = 20, start: datetime | None = None
) -> BenchConversation:
    """Generate one benchmark conversation, deterministic for ``seed``.

    Args:
        seed: Seeds the only random source; equal arguments give equal conversations.
        turns: Number of alternating turns, starting with the user.
        questions: Number of planted facts, each with one question (about half rare-word).
        start: UTC-aware time of the first turn; a seeded date in 2024 when omitted.

    Returns:
        The conversation, with questions kept apart from its turns.

    Raises:
        ValueError: If ``start`` is naive, or ``questions`` do not fit in the first 40% of
            ``turns`` (each fact takes two turns).
    """
    if turns < 2 or questions < 0:
        raise ValueError("need turns >= 2 and questions >= 0")
    if start is not None and start.tzinfo is None:
        raise ValueError("start must be timezone-aware")
    rng = random.Random(seed)
    if start is None:
        start = datetime(2024, 1, 8, 8, 0, tzinfo=UTC) + timedelta(
            days=rng.randint(0, 200), minutes=rng.randint(0, 240)
        )
    start = start.astimezone(UTC)

    plants = _choose_plants(rng, questions)
    used = [False] * turns
    builders: list[Callable[[], str] | None] = [None] * turns
    owner: list[str | None] = [None] * turns  # the rare core a turn is allowed to contain
    fact_turns: list[int] = []
    distractor_turns: list[list[int]] = []
    plant_limit = int(turns * _PLANT_FRACTION)
    for plant in plants:
        index = _free_slot(rng, used, 1 if plant.assistant_voice else 0, plant_limit)
        fact_turns.append(index)
        owner[index] = plant.core
        builders[index] = functools.partial(_fact_text, rng, plant)
        builders[index + 1] = functools.partial(_reply_text, rng, plant)

    for plant in plants:
        taken = {p.key[1] for p in plants if p.family is plant.family}
        others = [key for key in plant.family.keys if key[1] not in taken]
        placed: list[int] = []
        for _ in range(rng.randint(1, 3) if others else 0):
            index = _free_slot(rng, used, 0, turns)
            placed.append(index)
            distractor = _Plant(plant.family, rng.choice(others), "", "", False, False)
            builders[index] = functools.partial(_distractor_text, rng, distractor)
            builders[index + 1] = functools.partial(_reply_text, rng, distractor)
        distractor_turns.append(sorted(placed))

    topic = rng.choice(_TOPICS)
    for index in range(turns):
        if builders[index] is not None:
            continue
        role = USER if index % 2 == 0 else ASSISTANT
        # Users stay on a topic for a few exchanges; an assistant answers the user's topic.
        follows_filler = index > 0 and not used[index - 1]
        if (role == USER or not follows_filler) and rng.random() < 0.45:
            topic = rng.choice(_TOPICS)
        builders[index] = functools.partial(_filler, rng, topic, role)

    contents = [_build(builder) for builder in builders]
    _remove_collisions(contents, builders, owner, [plant.core for plant in plants])

    sessions = _sessions(rng, turns)
    times = _timestamps(rng, sessions, start)
    turn_objects = tuple(
        Turn(USER if i % 2 == 0 else ASSISTANT, contents[i], times[i], sessions[i])
        for i in range(turns)
    )
    question_objects = tuple(
        _question(rng, plant, index, tuple(extra))
        for plant, index, extra in zip(plants, fact_turns, distractor_turns, strict=True)
    )
    return BenchConversation(f"bench-{seed}", turn_objects, question_objects)


def _build(builder: Callable[[], str] | None) -> str:
    if builder is None:  # pragma: no cover - every turn gets a builder above
        raise AssertionError("turn without a builder")
    return builder()


def _fact_text(rng: random.Random, plant: _Plant) -> str:
    role = ASSISTANT if plant.assistant_voice else USER
    templates = plant.family.assistant_facts if plant.assistant_voice else plant.family.facts
    return _pad(rng, _fill(rng, rng.choice(templates), plant.fixed), role=role)


def _distractor_text(rng: random.Random, plant: _Plant) -> str:
    line = _fill(rng, rng.choice(plant.family.distractors), plant.fixed)
    return _pad(rng, line, role=USER)


def _reply_text(rng: random.Random, plant: _Plant) -> str:
    if plant.assistant_voice:  # the user acknowledges, then carries on with something else
        return _pad(rng, rng.choice(_USER_ACKS), role=USER, lead=False)
    return _pad(rng, _fill(rng, rng.choice(plant.family.replies), plant.fixed), role=ASSISTANT)


def _remove_collisions(
    contents: list[str],
    builders: list[Callable[[], str] | None],
    owner: list[str | None],
    cores: list[str],
) -> None:
    """Regenerate any turn that contains a rare core other than its own.

    Generated filler (hosts, ids, invented names) can hit a planted core by chance; redrawing
    that turn keeps each rare token in exactly one turn.
    """
    for _ in range(50):
        bad = [
            index
            for index, text in enumerate(contents)
            if any(core in text.lower() for core in cores if core != owner[index])
        ]
        if not bad:
            return
        for index in bad:
            contents[index] = _build(builders[index])
    raise RuntimeError("could not keep rare tokens unique")  # pragma: no cover


def _question(
    rng: random.Random, plant: _Plant, answer_turn: int, distractors: tuple[int, ...]
) -> Question:
    family = plant.family
    templates = family.rare_questions if plant.shares else family.paraphrase_questions
    return Question(
        text=_fill(rng, rng.choice(templates), plant.fixed),
        answer_turn=answer_turn,
        kind=RARE_WORD if plant.shares else PARAPHRASE,
        shares_rare_word=plant.shares,
        rare_word=plant.token if plant.shares else None,
        family=family.name,
        distractor_turns=distractors,
    )


def generate_corpus(
    n: int, *, seed: int = 0, turns: int = 600, questions: int = 20
) -> list[BenchConversation]:
    """Generate ``n`` conversations; a longer corpus extends a shorter one with the same seed.

    Args:
        n: Number of conversations.
        seed: Seeds the per-conversation seeds.
        turns: Turns per conversation.
        questions: Questions per conversation.

    Returns:
        The conversations, with distinct ids.
    """
    seeds = random.Random(seed)
    return [
        generate_conversation(seeds.randrange(2**31), turns=turns, questions=questions)
        for _ in range(n)
    ]


def ingest_items(conv: BenchConversation) -> list[IngestItem]:
    """The turns of ``conv`` as append-ready items; metadata records turn index and session."""
    return [
        IngestItem(
            role=turn.role,
            content=turn.content,
            timestamp=turn.timestamp,
            metadata={"turn": str(index), "session": str(turn.session)},
        )
        for index, turn in enumerate(conv.turns)
    ]


def multi_hop_questions(conv: BenchConversation, count: int, seed: int = 0) -> list[Question]:
    """Questions whose answer needs two planted facts from sessions far apart.

    Each joins two of the conversation's questions whose answer turns lie in different
    sessions at least _HOP_DISTANCE turns apart ("Q1 And Q2"): the context must bring back
    both turns, from two places in the history, within one budget.

    Args:
        conv: A generated conversation.
        count: How many questions at most (fewer when too few pairs qualify).
        seed: Seeds the choice of pairs.
    """
    rng = random.Random(seed)
    pairs = [
        (a, b)
        for a in conv.questions
        for b in conv.questions
        if b.answer_turn - a.answer_turn >= _HOP_DISTANCE
        and conv.turns[a.answer_turn].session != conv.turns[b.answer_turn].session
    ]
    rng.shuffle(pairs)
    out: list[Question] = []
    used: set[int] = set()
    for a, b in pairs:
        if len(out) == count:
            break
        if a.answer_turn in used or b.answer_turn in used:
            continue
        used.update((a.answer_turn, b.answer_turn))
        out.append(
            Question(
                text=f"{a.text} And {b.text[0].lower()}{b.text[1:]}",
                answer_turn=a.answer_turn,
                kind=MULTI_HOP,
                shares_rare_word=a.shares_rare_word and b.shares_rare_word,
                rare_word=None,
                family=f"{a.family}+{b.family}",
                distractor_turns=a.distractor_turns + b.distractor_turns,
                also_turns=(b.answer_turn,),
            )
        )
    return out
