"""Bad input against a real server: every method of ContextService gets generated requests
(tests/property/proto_inputs.py walks the proto descriptors, so a new method or field is
covered without anyone remembering to), as messages and as hand-written bytes. Every answer
must be a status docs/api.md documents for bad input, never INTERNAL or UNKNOWN; requests the
contract refuses (NaN, enum numbers the proto does not define, words outside the roles, flags
and file kinds) must not succeed; unknown fields must not change a read's status. Afterwards
the server still serves, every item gets embedded, a "canary" namespace no request names
reads back exactly as before, a fresh conversation works, and nothing else was logged at
ERROR.

Short run (in the suite: 500 inputs, drawn the same way every time; about 30 s):

    pytest tests/property/test_bad_input.py

Long run, printing inputs and statuses per method:

    CONTEXTWM_FUZZ_EXAMPLES=10000 pytest tests/property/test_bad_input.py -s -p no:cacheprovider

CONTEXTWM_FUZZ_SEED=<n> draws other inputs (hypothesis's seed); CONTEXTWM_FUZZ_LOG=<file>
writes a line per call: seconds, bytes, method, how it was made, status, message, request.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO, cast

import grpc
import proto_inputs as pi
import pytest
from conftest import StartService
from contextwm.access.keys import Keys
from contextwm.domain.access import Role
from contextwm.domain.usage import ModelSpec
from contextwm_client import Client
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, Phase, given, seed, settings

EXAMPLES = int(os.environ.get("CONTEXTWM_FUZZ_EXAMPLES", "500"))
SEED = os.environ.get("CONTEXTWM_FUZZ_SEED")
# A file to write every call to (method, kind, status, message, request), to see what got where.
CALL_LOG = os.environ.get("CONTEXTWM_FUZZ_LOG")
CANARY = "canary"
NAMESPACES = ("default", "fz")
CONVERSATIONS = ("alpha", "beta", "gamma")
MODEL = "fuzz-model"
# The statuses docs/api.md gives for bad input ("Errors and statuses").
ACCEPTED = frozenset(
    {
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.PERMISSION_DENIED,
    }
)
UNARY_SECONDS = 60.0
# Watch waits for events for ever: read a few, or stop at this deadline.
STREAM_SECONDS = 0.5
STREAM_MESSAGES = 3
# Methods that only read, by name: the same request with and without unknown fields must get
# the same status from them.
READS = ("Get", "List", "Search")


@dataclass(frozen=True, slots=True)
class Failure:
    """One answer that breaks the contract."""

    call: pi.Call | None  # None: found after the run (server log, canary, health)
    code: str
    details: str
    problem: str
    cause: str = ""  # the server's exception, from the log line of an INTERNAL's incident

    def report(self) -> str:
        where = self.call.rpc.name if self.call else "(after the run)"
        text = f"{where}: {self.problem}: {self.code} {self.details[:300]!r}"
        if self.cause:
            text += f"\n    server: {self.cause}"
        if self.call:
            text += f"\n    request ({self.call.kind}): {self.call.describe()}"
        return text


@dataclass
class FuzzRun:
    """Sends calls to one server, counts statuses per method, collects failures."""

    channel: grpc.Channel
    reseed: Callable[[str, str], None]
    log: TextIO  # a line per call (os.devnull unless CONTEXTWM_FUZZ_LOG names a file)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    failures: list[Failure] = field(default_factory=list)

    def send(self, call: pi.Call) -> grpc.StatusCode:
        start = time.perf_counter()
        code, details = self._invoke(call)
        took = time.perf_counter() - start
        self.seconds[call.rpc.name] += took
        self.counts[(call.rpc.name, code.name)] += 1
        print(
            f"{took:7.3f} {len(call.payload):9d} {call.rpc.name} {call.kind} {code.name}",
            repr(details[:200]),
            call.describe(),
            file=self.log,
            flush=True,
        )
        problem = _problem(call, code, details)
        if problem:
            self.failures.append(Failure(call, code.name, details, problem))
        if call.plain is not None and call.rpc.name.startswith(READS):
            plain = pi.Call(
                call.rpc, call.plain, "without unknown fields", pi.parse(call.rpc, call.plain)
            )
            if self.send(plain) != code:
                problem = "unknown fields changed the status"
                self.failures.append(Failure(call, code.name, details, problem))
        if code == grpc.StatusCode.OK and call.rpc.name == "DeleteConversation":
            assert call.message is not None
            request: Any = call.message
            self.reseed(request.namespace, request.conversation_id)
        return code

    def _invoke(self, call: pi.Call) -> tuple[grpc.StatusCode, str]:
        rpc = call.rpc
        try:
            if rpc.client_streaming:
                response = self.channel.stream_unary(
                    rpc.path, request_serializer=_raw, response_deserializer=rpc.response.FromString
                )(iter([call.payload]), timeout=UNARY_SECONDS)
                # A stream's bad items are refused one by one in an OK response.
                failed = getattr(response, "failed", 0)
                return grpc.StatusCode.OK, f"{failed} items refused" if failed else ""
            if not rpc.streaming:
                self.channel.unary_unary(
                    rpc.path, request_serializer=_raw, response_deserializer=rpc.response.FromString
                )(call.payload, timeout=UNARY_SECONDS)
                return grpc.StatusCode.OK, ""
            stream: _StreamCall = self.channel.unary_stream(
                rpc.path, request_serializer=_raw, response_deserializer=rpc.response.FromString
            )(call.payload, timeout=STREAM_SECONDS + len(call.payload) / 20e6)
            for n, _ in enumerate(stream, 1):
                if n == STREAM_MESSAGES:
                    stream.cancel()  # a stream that keeps sending is as good as one that ends
                    break
            return grpc.StatusCode.OK, ""
        except grpc.RpcError as exc:
            return exc.code(), exc.details() or ""

    def table(self) -> str:
        """Inputs per method and status, with each method's total time."""
        codes = sorted({c for _, c in self.counts}, key=lambda c: (c != "OK", c))
        methods = [r.name for r in pi.RPCS]
        width = max(len(m) for m in methods)
        head = f"{'method':<{width}} {'inputs':>6} {'secs':>6} " + " ".join(
            f"{c:>{max(len(c), 5)}}" for c in codes
        )
        lines = [head]
        for m in methods:
            row = [self.counts[(m, c)] for c in codes]
            lines.append(
                f"{m:<{width}} {sum(row):>6} {self.seconds[m]:>6.1f} "
                + " ".join(f"{n:>{max(len(c), 5)}}" for n, c in zip(row, codes, strict=True))
            )
        totals = [sum(n for (_, c2), n in self.counts.items() if c2 == c) for c in codes]
        lines.append(
            f"{'total':<{width}} {sum(totals):>6} {sum(self.seconds.values()):>6.1f} "
            + " ".join(f"{n:>{max(len(c), 5)}}" for n, c in zip(totals, codes, strict=True))
        )
        return "\n".join(lines)


class _StreamCall(Protocol):
    """What we need of grpc's response-streaming call (grpc-stubs leaves cancel untyped)."""

    def __iter__(self) -> Iterator[Message]: ...

    def cancel(self) -> bool: ...


def _raw(payload: bytes) -> bytes:
    return payload


def _problem(call: pi.Call, code: grpc.StatusCode, details: str) -> str | None:
    """What is wrong with an answer, if anything."""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and call.rpc.streaming:
        return None  # our own short deadline on a stream that waits for events
    if code not in ACCEPTED:
        return "status not documented"
    if "metadata size exceeds" in details:
        # The server's message did not fit gRPC's metadata limit: the client got this from
        # its own library instead of the server's status (an error echoing huge input).
        return "the status's message was too long to deliver"
    if code == grpc.StatusCode.OK and call.message is not None:
        wrong = invalid_part(call.message)
        if wrong and not details.endswith("items refused"):
            return f"accepted {wrong}"
    return None


# ---------------------------------------------------------------- what must not succeed


# The vocabularies the proto says the server validates, by the name of the request field (a
# list of words, or a map keyed by them); a word counts if it is one after strip().lower().
VOCABULARIES: dict[str, tuple[str, frozenset[str]]] = {
    "role": ("role", frozenset(pi.ROLES)),
    "roles": ("role", frozenset(pi.ROLES)),
    "flags": ("flag", frozenset(pi.FLAGS)),
    "importance": ("flag", frozenset(pi.FLAGS)),
    "kind": ("file kind", frozenset(pi.FILE_KINDS)),
}


def invalid_part(msg: Message, path: str = "") -> str | None:
    """The part of a request the contract refuses, whatever else it holds: a NaN, an enum
    number the proto does not define, a word outside its vocabulary."""
    for f, value in msg.ListFields():
        where = f"{path}{f.name}"
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            value_field = f.message_type.fields_by_name["value"]
            for k, v in value.items():
                found = _unknown_word(f.name, k, where) or _invalid_value(
                    value_field, v, f"{where}[{k!r}]"
                )
                if found:
                    return found
            continue
        for v in value if f.is_repeated else [value]:
            found = _invalid_value(f, v, where)
            if found:
                return found
    return None


def _invalid_value(f: FieldDescriptor, value: Any, where: str) -> str | None:
    if isinstance(value, Message):
        return invalid_part(value, f"{where}.")
    if isinstance(value, float) and math.isnan(value):
        return f"NaN in {where}"
    if f.enum_type is not None and value not in f.enum_type.values_by_number:
        return f"unknown {f.enum_type.name} number {value} in {where}"
    return _unknown_word(f.name, value, where)


def _unknown_word(field_name: str, value: Any, where: str) -> str | None:
    vocabulary = VOCABULARIES.get(field_name)
    if vocabulary is None or not isinstance(value, str):
        return None
    label, words = vocabulary
    return None if value.strip().lower() in words else f"unknown {label} {value!r} in {where}"


# ---------------------------------------------------------------- the server and its data


LONG_ANSWER = " ".join(
    f"Step {n}: restart worker {n}, check the pool, and watch the error rate." for n in range(20)
)


def seed_conversation(stub: pb_grpc.ContextServiceStub, namespace: str, cid: str) -> None:
    """A conversation with archived, pinned, compacted or truncated items, file reads and a
    checkpoint: something for every method to find."""
    stub.CreateConversation(
        pb.CreateConversationRequest(
            namespace=namespace,
            conversation_id=cid,
            settings=pb.ConversationSettings(
                window_max_items=4, model=MODEL, mask_tool_outputs_after_turns=1
            ),
        )
    )
    items = [
        pb.NewItem(role="system", content="You are a careful deploy assistant."),
        pb.NewItem(role="user", content="What port does the billing service use?"),
        pb.NewItem(
            role="assistant", content="The billing service listens on port 8443.", flags=["pinned"]
        ),
        pb.NewItem(
            role="tool",
            content="def load():\n    return open('a.py').read()\n",
            metadata={"tool": "read_file", "turn": "2"},
            file=pb.FileRef(path="a.py", kind="read"),
        ),
        pb.NewItem(role="assistant", content="Deploy failed: ConnectionError on db-3"),
        pb.NewItem(role="user", content="Why did it fail last week?"),
        pb.NewItem(
            role="tool",
            content="def load():\n    return open('a.py').read()\n",
            file=pb.FileRef(path="a.py", kind="read"),
        ),
        pb.NewItem(role="assistant", content="Fixed: the pool size was too small. " + LONG_ANSWER),
    ]
    stub.AppendBatch(pb.AppendBatchRequest(namespace=namespace, conversation_id=cid, items=items))
    stub.CreateCheckpoint(
        pb.CreateCheckpointRequest(namespace=namespace, conversation_id=cid, name="cp1")
    )
    for text in ("And the cache?", "The cache is warmed at start-up."):
        stub.Append(
            pb.AppendRequest(
                namespace=namespace, conversation_id=cid, item=pb.NewItem(role="user", content=text)
            )
        )
    if cid == "alpha":
        stub.Compact(
            pb.CompactRequest(namespace=namespace, conversation_id=cid, summary="Billing: 8443.")
        )
    elif cid == "beta":
        stub.Truncate(pb.TruncateRequest(namespace=namespace, conversation_id=cid, strategy="none"))
        stub.GetUsage(
            pb.GetUsageRequest(
                namespace=namespace,
                conversation_id=cid,
                reported=pb.ReportedUsage(input_tokens=1500),
            )
        )


def snapshot(stub: pb_grpc.ContextServiceStub, namespace: str) -> list[tuple[str, Message]]:
    """Everything the API shows of a namespace, as (what, message) pairs."""
    out: list[tuple[str, Message]] = []
    conversations: list[str] = []
    for page in _pages(
        lambda token: stub.ListConversations(
            pb.ListConversationsRequest(namespace=namespace, page_size=1, page_token=token)
        )
    ):
        out.append(("ListConversations", page))
        conversations += [c.conversation_id for c in page.conversations]
    for cid in conversations:
        out += [(f"{cid}: {what}", m) for what, m in _conversation_view(stub, namespace, cid)]
    return out


def _conversation_view(
    stub: pb_grpc.ContextServiceStub, namespace: str, cid: str
) -> Iterator[tuple[str, Message]]:
    """What every reading method answers about one conversation, its Watch replay included."""
    ids: dict[str, Any] = {"namespace": namespace, "conversation_id": cid}
    yield "GetConversation", stub.GetConversation(pb.GetConversationRequest(**ids))
    for page in _pages(
        lambda t: stub.ListItems(pb.ListItemsRequest(**ids, page_size=3, page_token=t))
    ):
        yield "ListItems", page
    for page in _pages(
        lambda t: stub.GetActiveContext(
            pb.GetActiveContextRequest(**ids, page_size=3, page_token=t)
        )
    ):
        yield "GetActiveContext", page
    for page in _pages(
        lambda t: stub.ListContextEdits(
            pb.ListContextEditsRequest(**ids, page_size=1, page_token=t)
        )
    ):
        yield "ListContextEdits", page
    yield "ListCheckpoints", stub.ListCheckpoints(pb.ListCheckpointsRequest(**ids))
    yield "GetUsage", stub.GetUsage(pb.GetUsageRequest(**ids))
    query = "what port does billing use, and why did the deploy fail?"
    yield "Search", stub.Search(pb.SearchRequest(**ids, query=query, include_window=True, top_k=50))
    yield "GetContext", stub.GetContext(pb.GetContextRequest(**ids, query=query, max_tokens=2000))
    # The replay, read up to the newest event (after it the stream waits for new ones), not
    # for a fixed time: a busy server may replay slowly.
    last = stub.GetConversation(pb.GetConversationRequest(**ids)).last_event_id
    if last:
        events = stub.Watch(pb.WatchRequest(**ids), timeout=UNARY_SECONDS)
        try:
            for event in events:
                yield "Watch", event
                if event.id >= last:
                    break
        finally:
            cast(_StreamCall, events).cancel()


def _pages(fetch: Callable[[str], Any]) -> Iterator[Any]:
    token = ""
    while True:
        page = fetch(token)
        yield page
        token = page.next_page_token
        if not token:
            return


def _wait_indexed(stub: pb_grpc.ContextServiceStub, namespace: str, seconds: float) -> bool:
    """Waits until every item of the namespace is embedded; False if some are not in time."""
    deadline = time.monotonic() + seconds
    while True:
        pending = sum(
            c.pending_embeddings
            for page in _pages(
                lambda token: stub.ListConversations(
                    pb.ListConversationsRequest(namespace=namespace, page_token=token)
                )
            )
            for c in page.conversations
        )
        if pending == 0:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


class _ErrorRecords(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def attach_causes(self, failures: list[Failure]) -> list[Failure]:
        """Gives each failure with an incident id the exception its log line holds (in place);
        returns the ERROR records no failure explains, as failures of their own."""
        by_incident: dict[str, str] = {}
        unexplained = []
        for record in self.records:
            incident = re.search(r"incident (\w+)", record.getMessage())
            if incident:
                by_incident[incident.group(1)] = _cause(record)
            else:
                unexplained.append(
                    Failure(
                        None, record.name, record.getMessage(), "logged at ERROR", _cause(record)
                    )
                )
        for i, f in enumerate(failures):
            incident = re.search(r"incident (\w+)", f.details)
            if incident:
                failures[i] = dataclasses.replace(f, cause=by_incident.pop(incident.group(1), ""))
        for number, cause in by_incident.items():  # an incident no status reached us with
            unexplained.append(Failure(None, "", f"incident {number}", "logged at ERROR", cause))
        return unexplained


def _cause(record: logging.LogRecord) -> str:
    """The exception of a log record and the innermost line of ours it came from."""
    if not record.exc_info or record.exc_info[1] is None:
        return ""
    exc = record.exc_info[1]
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [fr for fr in frames if "/contextwm/" in fr.filename] or frames
    where = f" at {Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else ""
    return f"{type(exc).__module__}.{type(exc).__name__}: {str(exc)[:200]}{where}"


@pytest.fixture
def error_log() -> Iterator[_ErrorRecords]:
    """ERROR records of every logger (the server runs in this process) while the test runs."""
    handler = _ErrorRecords()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


# ---------------------------------------------------------------- the test


class _Bearer(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[type-arg]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[type-arg]
    grpc.StreamUnaryClientInterceptor,  # type: ignore[type-arg]
    grpc.StreamStreamClientInterceptor,  # type: ignore[type-arg]
):
    """Sends an API key with every call of a channel, as a client with api_key= does."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_key(self, details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), self._header])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._with_key(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._with_key(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._with_key(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._with_key(details), requests)


# The suite's 300 s per test is for the short run; a long one gets time in proportion. Half
# the examples run with API keys required (an admin key for every namespace), half without.
@pytest.mark.timeout(300 + EXAMPLES // 20)
@pytest.mark.parametrize("keys", [False, True], ids=["no-keys", "keys-required"])
def test_bad_input_gets_documented_statuses_and_harms_nothing(
    start_service: StartService, tmp_path: Path, error_log: _ErrorRecords, keys: bool
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.py").write_text("def load():\n    return open('a.py').read()\n")
    (workspace / "README.md").write_text("# Billing\nListens on 8443.\n")
    service = start_service(
        models={MODEL: ModelSpec(MODEL, context_limit=2000, reserved_reply_tokens=200)},
        workspace_root=str(workspace),
        workspace_allowed_roots=(str(tmp_path),),
        require_api_keys=keys,
    )
    token = None
    channel = grpc.insecure_channel(f"127.0.0.1:{service.port}")
    if keys:
        _, token = Keys(service.store, time.time).create("fuzz", Role.ADMIN, ["*"])
        channel = grpc.intercept_channel(channel, _Bearer(token))
    stub = pb_grpc.ContextServiceStub(channel)
    for namespace in (*NAMESPACES, CANARY):
        for cid in CONVERSATIONS:
            seed_conversation(stub, namespace, cid)
    # The snapshot must not catch the indexer half way.
    assert _wait_indexed(stub, CANARY, 120), "the seeded items were not embedded in 120 s"
    before = snapshot(stub, CANARY)
    page = stub.ListItems(pb.ListItemsRequest(conversation_id=CONVERSATIONS[0], page_size=2))
    world = pi.World(
        namespaces=("", *NAMESPACES),
        conversation_ids=CONVERSATIONS,
        seqs=tuple(range(1, 12)),
        checkpoints=("cp1",),
        page_tokens=(page.next_page_token,),
        files=("a.py", "README.md", str(workspace / "a.py")),
        workspace_roots=(str(workspace), str(tmp_path)),
        models=(MODEL,),
        forbidden_namespace=CANARY,
    )

    def reseed(namespace: str, cid: str) -> None:
        """A deleted conversation comes back, so that later calls still find it."""
        if namespace in world.namespaces and cid in CONVERSATIONS:
            seed_conversation(stub, namespace or "default", cid)

    with open(CALL_LOG or os.devnull, "w") as log:
        run = FuzzRun(channel, reseed, log)
        started = time.perf_counter()
        _fuzz(run, world)
    print(f"\n{sum(run.counts.values())} inputs in {time.perf_counter() - started:.0f} s")
    print(run.table())

    failures = list(run.failures)
    health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    if health.status != health_pb2.HealthCheckResponse.SERVING:
        failures.append(Failure(None, "", str(health), "health check not SERVING"))
    for namespace in NAMESPACES:
        if not _wait_indexed(stub, namespace, 60):
            failures.append(Failure(None, "", namespace, "items still not embedded after 60 s"))
    changed = _first_difference(before, snapshot(stub, CANARY))
    if changed:
        failures.append(Failure(None, "", changed, "the canary namespace changed"))
    channel.close()
    with Client(f"127.0.0.1:{service.port}", api_key=token) as client:
        client.append("after-fuzz", "The billing service listens on port 8443.", role="user")
        text = client.get_context("after-fuzz", "billing port", max_tokens=500).text
        if "8443" not in text:
            failures.append(Failure(None, "", text, "a fresh conversation lost its item"))
    failures += error_log.attach_causes(failures)
    _verdict(failures)


def _fuzz(run: FuzzRun, world: pi.World) -> None:
    """Every method once over the gRPC message limit, then the generated calls."""
    for rpc in pi.RPCS:
        run.send(pi.Call(rpc, pi.oversize_payload(), "oversize", None))

    @settings(
        max_examples=EXAMPLES // 2,
        derandomize=SEED is None,
        database=None,
        deadline=None,
        # No shrinking: the server's state moves on, so a failure may not come back the same.
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(pi.calls(world))
    def fuzz(call: pi.Call) -> None:
        if call.message is not None and names_namespace(call.message, world.forbidden_namespace):
            return  # practically never drawn; the canary must stay untouched
        run.send(call)

    if SEED is not None:
        fuzz = seed(int(SEED))(fuzz)
    fuzz()


def _verdict(failures: list[Failure]) -> None:
    if failures:
        pytest.fail(_report("failures", failures))


def names_namespace(msg: Message, namespace: str) -> bool:
    return any(
        (f.name == "namespace" and v == namespace)
        or (isinstance(v, Message) and names_namespace(v, namespace))
        for f, v in msg.ListFields()
    )


def _report(title: str, failures: list[Failure]) -> str:
    """One entry per kind of failure: method, problem, status, message (without incident ids)
    and the server's exception type, with the first example in full."""
    if not failures:
        return ""
    groups: dict[tuple[str, ...], list[Failure]] = defaultdict(list)
    for f in failures:
        details = re.sub(r"incident \w+", "incident …", f.details)[:120]
        method = f.call.rpc.name if f.call else ""
        groups[(method, f.problem, f.code, details, f.cause.split(":")[0])].append(f)
    lines = [f"\n{title} ({len(failures)} failures, {len(groups)} kinds):"]
    for group in groups.values():
        lines.append(f"  {len(group)}x {group[0].report()}")
    return "\n".join(lines)


def _first_difference(
    before: list[tuple[str, Message]], after: list[tuple[str, Message]]
) -> str | None:
    for (what, a), (_, b) in zip(before, after, strict=False):
        if a != b:
            return (
                f"{what}:\n  before: {pi.describe_message(a)}\n  after:  {pi.describe_message(b)}"
            )
    if len(before) != len(after):
        return f"{len(before)} answers before, {len(after)} after"
    return None
