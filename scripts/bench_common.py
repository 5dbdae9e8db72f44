"""Shared helpers of the contextwm benchmarks (the scripts/bench_*.py that import it).

Seeded varied texts of about 40 tokens, a `contextwm serve` subprocess on port 0 with its own
data directory (so the server's CPU and resident memory are its own), percentiles over sorted
lists, and plain-text tables. Not a benchmark by itself.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from contextwm_client import Client

# Set before anything imports transformers or huggingface_hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

SCRIPTS_DIR = Path(__file__).resolve().parent

# ------------------------------------------------------------------ texts


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_PEOPLE = _words(
    "Alice Priya Marco Chen Fatima Jonas Elena Kwame Sofia Ravi Lena Tomas Aiko Mateo Nadia"
    " Oscar Ingrid Yusuf Clara Dmitri Hana Pablo Greta Amara Felix Leila Bruno Mei Anders Zara"
)
_DAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_PLACES = _words(
    "Lisbon Oslo Nairobi Kyoto Denver Porto Krakow Austin Seoul Dublin Lima Hanoi Zurich Cairo"
)
_ADVERBS = _words(
    "slowly intermittently again twice quietly suddenly reliably rarely consistently badly"
)


class _Topic:
    def __init__(
        self, name: str, nouns: str, verbs: str, actions: str, details: str, questions: str
    ) -> None:
        self.name = name
        self.nouns = nouns.split(", ")
        self.verbs = verbs.split(", ")
        self.actions = actions.split(", ")
        self.details = details.split(", ")
        self.questions = questions.split(", ")


_TOPICS: tuple[_Topic, ...] = (
    _Topic(
        "deploy",
        "staging cluster, canary release, helm chart, rollout, load balancer, blue green switch,"
        " container image, readiness probe, autoscaler, release pipeline",
        "stalled, failed health checks, rolled back, timed out, drifted, crashed on start",
        "pin the image digest, raise the probe timeout, drain the old nodes, bump the replica"
        " count, rerun the pipeline, freeze deploys",
        "only in the eu region, right after the config push, when traffic peaked,"
        " with the new base image, behind the feature flag",
        "why did the rollout stall, which image did we ship, who approved the canary,"
        " what broke the readiness probe",
    ),
    _Topic(
        "database",
        "postgres replica, migration script, connection pool, query planner, vacuum job,"
        " index on orders, backup snapshot, read replica lag, schema change, deadlock",
        "locked the table, ran for hours, returned stale rows, exhausted connections,"
        " picked a sequential scan, corrupted a page",
        "add a partial index, split the migration, raise the pool size, analyze the table,"
        " restore from the snapshot, kill the long query",
        "on the billing schema, during the nightly batch, after the upgrade to version 16,"
        " under heavy write load, for the archive partition",
        "which migration locked the table, how big is the replica lag, when was the last backup,"
        " why is the planner choosing a seq scan",
    ),
    _Topic(
        "frontend",
        "checkout page, date picker, dark mode toggle, bundle size, service worker,"
        " settings modal, hydration step, css grid, search box, image carousel",
        "flickered, rendered twice, broke on safari, lost focus, leaked memory, froze the tab",
        "lazy load the carousel, memoize the list, drop the polyfill, debounce the input,"
        " split the bundle, pin the font version",
        "on small screens, with screen readers, in the german locale, after the react upgrade,"
        " when the cache is cold",
        "why does the modal lose focus, what grew the bundle, who owns the date picker,"
        " which browser breaks the grid",
    ),
    _Topic(
        "testing",
        "flaky integration test, fixture factory, snapshot file, coverage report, test runner,"
        " mock server, property test, load test, smoke suite, contract test",
        "timed out on ci, passed locally, leaked temp files, ordered results randomly,"
        " hit the real network, used the wrong clock",
        "seed the random generator, freeze the clock, isolate the fixture, retry only once,"
        " mark it as slow, record a new snapshot",
        "on the arm runners, only under parallel mode, since the python upgrade,"
        " with the shared database, on the nightly job",
        "which test is flaky, why does the smoke suite time out, what does the contract test"
        " check, who wrote the fixture factory",
    ),
    _Topic(
        "network",
        "dns record, tls certificate, vpn tunnel, proxy config, firewall rule, cdn cache,"
        " ipv6 route, websocket gateway, rate limiter, mtu setting",
        "expired, dropped packets, resolved to the old address, returned 502, throttled clients,"
        " fragmented large frames",
        "renew the certificate, lower the ttl, purge the cache, widen the rule, lower the mtu,"
        " restart the tunnel",
        "from the office network, for mobile clients, across the atlantic link,"
        " on port 8443, since the provider maintenance",
        "when does the certificate expire, why did dns resolve the old address,"
        " which rule blocks the gateway, what is the mtu on the tunnel",
    ),
    _Topic(
        "security",
        "api token, audit log, sso login, password reset flow, secret scanner, access review,"
        " signing key, session cookie, permission matrix, intrusion alert",
        "leaked in a log line, expired early, granted too much access, skipped mfa,"
        " flagged a false positive, rotated without notice",
        "rotate the token, scope the role down, enable mfa, revoke the old key,"
        " add a deny rule, page the security lead",
        "for the contractor accounts, in the admin console, on the legacy service,"
        " after the vendor breach, for read only users",
        "who rotated the signing key, which token leaked, why did sso skip mfa,"
        " what did the access review find",
    ),
    _Topic(
        "travel",
        "flight to {place}, hotel booking, train pass, rental car, visa appointment,"
        " airport transfer, travel insurance, seat upgrade, layover, conference ticket",
        "got cancelled, was overbooked, changed the gate, needs a new passport scan,"
        " charged twice, moved to a later date",
        "rebook the flight, ask for a refund, print the boarding pass, call the hotel,"
        " pack the adapter, share the itinerary",
        "for the team offsite, in early spring, with a window seat, near the old town,"
        " before the long weekend",
        "when does the flight leave, which hotel did we pick, how long is the layover,"
        " who books the rental car",
    ),
    _Topic(
        "cooking",
        "sourdough starter, lentil soup, birthday cake, tomato sauce, grill marinade,"
        " pasta dough, curry paste, pickled onions, pie crust, ramen broth",
        "came out too salty, did not rise, burned on the bottom, split the sauce,"
        " needed more time, tasted flat",
        "add more lemon, rest the dough overnight, lower the oven heat, toast the spices,"
        " double the garlic, use fresh basil",
        "for the dinner party, with gluten free flour, in the cast iron pan,"
        " for twelve guests, on a rainy evening",
        "how long should the dough rest, what went into the curry paste,"
        " why did the cake sink, which oven setting worked",
    ),
    _Topic(
        "finance",
        "quarterly budget, expense report, invoice batch, tax filing, vendor contract,"
        " payroll run, cloud bill, pension plan, savings goal, currency transfer",
        "went over budget, was rejected by finance, doubled this month, missed the deadline,"
        " used the wrong exchange rate, needs a second approval",
        "split the cost center, file an extension, cancel the unused seats, renegotiate the"
        " contract, move funds on Friday, tag the reserved instances",
        "for the marketing team, in the third quarter, in euros, before the audit,"
        " for the new office",
        "why did the cloud bill double, when is the tax deadline, who approves the expense"
        " report, which vendor contract renews next",
    ),
    _Topic(
        "ml",
        "training run, learning rate schedule, eval set, tokenizer, checkpoint, gpu node,"
        " data loader, embedding model, reward model, ablation study",
        "diverged after warmup, ran out of memory, overfit the eval set, stalled on io,"
        " produced nan losses, lost the best checkpoint",
        "lower the learning rate, shard the dataset, enable mixed precision,"
        " dedupe the eval set, resume from the checkpoint, pin the tokenizer",
        "at step forty thousand, on the eight gpu node, with the larger batch size,"
        " for the multilingual split, after the data refresh",
        "why did the run diverge, which checkpoint scored best, what learning rate did we"
        " pick, who owns the eval set",
    ),
    _Topic(
        "garden",
        "tomato seedlings, compost bin, rain barrel, apple tree, herb bed, drip irrigation,"
        " raised bed, rose bush, lawn patch, greenhouse vent",
        "wilted in the heat, got aphids, flooded after the storm, grew mold,"
        " bolted early, froze overnight",
        "water at dawn, add mulch, prune the branches, spray neem oil, move the pots,"
        " turn the compost",
        "on the south wall, during the heatwave, in clay soil, after the late frost,"
        " near the fence",
        "when should we prune the apple tree, why did the seedlings wilt,"
        " what fixed the aphids, how often does the drip line run",
    ),
    _Topic(
        "hiring",
        "backend role, interview loop, take home task, offer letter, onboarding plan,"
        " referral bonus, job posting, reference check, salary band, intern program",
        "stalled for two weeks, got three strong candidates, was declined, needs a new panel,"
        " moved to final round, lost the top candidate",
        "shorten the loop, update the posting, schedule the debrief, raise the band,"
        " send the offer today, assign an onboarding buddy",
        "for the platform team, in the berlin office, for remote candidates,"
        " before the hiring freeze, for senior engineers",
        "who is on the interview panel, when do we send the offer, which candidate declined,"
        " what is the salary band",
    ),
)

_USER_CLAUSES = (
    "{person} told me the {noun} {verb} {detail}",
    "I noticed the {noun} {verb} {adverb} {detail}",
    "can you check why the {noun} {verb} on {day}",
    "the {noun} {verb} again and {person} is waiting on it",
    "we tracked it in ticket {ticket} and the {noun} still {verb}",
    "my plan is to {action} unless {person} objects",
    "before {day} we need to {action} for the {noun}",
    "the {noun2} looks fine but the {noun} {verb} {detail}",
)
_ASSISTANT_CLAUSES = (
    "the likely cause is that the {noun} {verb} {detail}",
    "I suggest we {action} and then watch the {noun2}",
    "according to the notes from {day}, {person} decided to {action}",
    "the logs on {host} show the {noun} {verb} {adverb}",
    "a safer option is to {action} first, since the {noun2} depends on it",
    "I updated {file} so the {noun} no longer {verb}",
    "the numbers from {place} suggest the {noun} {verb} {detail}",
    "next step: {action}, then ask {person} to confirm by {day}",
)


def _ticket(rng: random.Random) -> str:
    return f"{rng.choice(('OPS', 'BUG', 'FIN', 'ML', 'WEB'))}-{rng.randint(100, 9999)}"


def _host(rng: random.Random) -> str:
    return f"{rng.choice(('web', 'db', 'api', 'gpu', 'edge'))}-{rng.randint(1, 60):02d}"


def _file(rng: random.Random, topic: _Topic) -> str:
    return f"{topic.name}_{rng.choice(('config', 'notes', 'plan', 'runner', 'sync'))}.py"


class TextGenerator:
    """Seeded, varied chat turns of roughly 40 cl100k tokens over a dozen topics.

    Every text is two or three clauses drawn from role-specific templates filled with
    topic vocabulary, people, days, places, ticket ids, hosts and file names, so that a BM25
    index sees a realistic spread of common and rare terms and an embedding model sees
    distinct but topically clustered sentences.
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    @property
    def topics(self) -> int:
        return len(_TOPICS)

    def _fill(self, template: str, topic: _Topic) -> str:
        rng = self._rng
        nouns = rng.sample(topic.nouns, 2)
        text = template.format(
            person=rng.choice(_PEOPLE),
            noun=nouns[0],
            noun2=nouns[1],
            verb=rng.choice(topic.verbs),
            action=rng.choice(topic.actions),
            detail=rng.choice(topic.details),
            adverb=rng.choice(_ADVERBS),
            day=rng.choice(_DAYS),
            ticket=_ticket(rng),
            host=_host(rng),
            file=_file(rng, topic),
            place=rng.choice(_PLACES),
        )
        return text.replace("{place}", rng.choice(_PLACES))

    def text(self, role: str = "user", topic_index: int | None = None) -> tuple[str, int]:
        """One turn and the index of its topic."""
        rng = self._rng
        t = rng.randrange(len(_TOPICS)) if topic_index is None else topic_index
        topic = _TOPICS[t]
        bank = _USER_CLAUSES if role == "user" else _ASSISTANT_CLAUSES
        clauses = [self._fill(c, topic) for c in rng.sample(bank, 3)]
        words = 0
        kept: list[str] = []
        for clause in clauses:
            kept.append(clause)
            words += len(clause.split())
            if words >= 27:
                break
        text = ". ".join(c[0].upper() + c[1:] for c in kept) + "."
        if rng.random() < 0.3:
            text += f" See {_ticket(rng)} for details."
        return text, t

    def query(self) -> str:
        """A question in the vocabulary of one topic, sometimes naming a person or day."""
        rng = self._rng
        topic = rng.choice(_TOPICS)
        q = rng.choice(topic.questions)
        q = q.replace("{place}", rng.choice(_PLACES))
        extra = rng.random()
        if extra < 0.3:
            q += f" according to {rng.choice(_PEOPLE)}"
        elif extra < 0.5:
            q += f" {rng.choice(topic.details)}"
        elif extra < 0.65:
            q = f"{q} and should we {rng.choice(topic.actions)}"
        return q[0].upper() + q[1:] + "?"


# ------------------------------------------------------------------ statistics and output


def wait_embedded(client: Any, conversation_ids: list[str], timeout: float = 3600.0) -> None:
    """Polls until no conversation has pending embeddings (a contextwm_client.Client).

    One conversation at a time, since all must drain: polling every one 10 times a second
    would itself take CPU from the indexer being measured (16 conversations: 160 calls/s).
    """
    deadline = time.monotonic() + timeout
    left = list(conversation_ids)
    while left:
        if client.get_conversation(left[-1]).pending_embeddings == 0:
            left.pop()
            continue
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(left)} conversations still have pending embeddings")
        time.sleep(0.1)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted, non-empty sequence."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), math.ceil(q / 100.0 * len(sorted_values))))
    return sorted_values[rank - 1]


def p50_p99(values: Sequence[float]) -> tuple[float, float]:
    s = sorted(values)
    return percentile(s, 50), percentile(s, 99)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A fixed-width table: first column left-aligned, the rest right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        rest = [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        parts = [r[0].ljust(widths[0]), *rest]
        return "  ".join(parts).rstrip()

    print(f"\n== {title}")
    print(line(cells[0]))
    print("  ".join("-" * w for w in widths))
    for r in cells[1:]:
        print(line(r))


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def log(message: str) -> None:
    """Progress on stderr, so stdout keeps only the figures."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def revision_env(ref: str, work: Path) -> Iterator[dict[str, str]]:
    """The environment that runs the server and client code of git revision ref (a temporary
    worktree under work, with this virtual environment's packages), for ServerProcess(env=)."""
    root = Path(__file__).resolve().parent.parent
    tree = work / f"tree-{ref}"
    subprocess.run(
        ["git", "-C", str(root), "worktree", "add", "--detach", str(tree), ref],
        check=True,
        capture_output=True,
    )
    try:
        yield {"PYTHONPATH": f"{tree / 'server'}:{tree / 'client'}"}
    finally:
        subprocess.run(
            ["git", "-C", str(root), "worktree", "remove", "--force", str(tree)],
            check=False,
            capture_output=True,
        )


@contextlib.contextmanager
def busy_loops(
    count: int, settle: float = 1.0, *, apart: bool = False
) -> Iterator[Callable[[], str]]:
    """`count` processes spinning a core each, as busy neighbours do, from `settle` seconds
    before the block until after it; apart: in a session of their own, as an agent started
    from another terminal is beside `contextwm serve` (the kernel's autogroups then share
    the cores between the sessions first). Yields a check, to call at the block's end: it
    says what ran and raises RuntimeError when a loop exited meanwhile."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=apart)
        for _ in range(count)
    ]
    try:
        time.sleep(settle if procs else 0.0)

        def check() -> str:
            alive = [p.pid for p in procs if p.poll() is None]
            if len(alive) != count:
                raise RuntimeError(f"a busy loop exited during the block: {alive} left")
            return f"{count} busy loop(s) (pids {', '.join(map(str, alive))}) ran throughout"

        yield check
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def rss_mb(pid: int | None = None) -> tuple[float, float]:
    """VmRSS and VmHWM (peak) of a process, in MiB, from /proc/<pid>/status."""
    path = Path(f"/proc/{pid if pid is not None else 'self'}/status")
    values = {"VmRSS": 0.0, "VmHWM": 0.0}
    for row in path.read_text().splitlines():
        key, _, rest = row.partition(":")
        if key in values:
            values[key] = int(rest.split()[0]) / 1024.0
    return values["VmRSS"], values["VmHWM"]


# ------------------------------------------------------------------ server subprocess


def child_pids(pid: int) -> list[int]:
    """The children of a process, from every one of its threads."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def serving_pid(started: int) -> int:
    """The process serving for `contextwm serve` started as pid `started`: its one child
    leading a session of its own (the default), or itself (--no-own-session)."""
    own = [c for c in child_pids(started) if os.getsid(c) == c]
    return own[0] if len(own) == 1 else started


_LISTENING = re.compile(r"contextwm listening on port (\d+)")


class ServerProcess:
    """`contextwm serve --port 0 --data-dir D` as a child process; a context manager.

    The server's log (stderr) goes to D/../D-server.log (or log_path); the port is read from
    the "contextwm listening on port N" line on stdout, and `start` returns once the server's
    health service reports it ready. A new ServerProcess on the data dir of a stopped or
    killed one starts on its data (give it another log_path to keep the first log).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        start_timeout: float = 180.0,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.extra_args = list(extra_args)
        self._env = env or {}
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}-server.log"
        self._start_timeout = start_timeout
        self._proc: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None
        self.port = 0
        self.start_seconds = 0.0
        self._serving = 0

    @property
    def pid(self) -> int:
        """The process that serves (what the measurements watch): the started one's child
        when it serves from a session of its own, else the started one."""
        return self._serving

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Self:
        exe = Path(sys.executable).parent / "contextwm"
        cmd = (
            [str(exe)]
            if exe.exists()
            else [sys.executable, "-c", "import sys, contextwm.cli as c; sys.exit(c.main())"]
        )
        cmd += ["serve", "--port", "0", "--data-dir", str(self.data_dir), "--log-level", "warning"]
        cmd += self.extra_args
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **self._env)
        self._log = self.log_path.open("w")
        began = time.perf_counter()
        self._proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self._log, text=True, env=env
        )
        found: list[int] = []
        stdout = self._proc.stdout
        assert stdout is not None

        def read() -> None:
            for row in stdout:
                m = _LISTENING.search(row)
                if m and not found:
                    found.append(int(m.group(1)))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        deadline = time.monotonic() + self._start_timeout
        while not found:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with {self._proc.returncode}; log: {self.log_path}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not start in time; log: {self.log_path}")
            time.sleep(0.05)
        self.port = found[0]
        # The port is bound before the model has loaded: ready is the health service's word.
        try:
            with Client(self.target) as client:
                client.wait_ready(max(deadline - time.monotonic(), 0.0))
        except Exception as exc:
            self.stop()
            raise RuntimeError(f"server did not get ready: {exc}; log: {self.log_path}") from exc
        self.start_seconds = time.perf_counter() - began
        self._serving = serving_pid(self._proc.pid)
        return self

    def rss_mb(self) -> tuple[float, float]:
        return rss_mb(self.pid)

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown code runs. The indexer's embedding child exits on
        its own once the server is gone (adapters/embedder_process.py)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self, timeout: float = 60.0) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
