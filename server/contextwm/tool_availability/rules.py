"""Which tools an agent may use in a session's states: the decision, and the default rules.

The highest-priority active state decides. An exclusive state allows only its own tools
(while an interactive command waits for input, nothing else may run); any other allows the
base tools plus its own. With no state active, or only states the rules do not name, the
base and the unrestricted tools are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from types import MappingProxyType

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.workspace_files import ToolAvailability, ToolCheck, ToolRules

# The default states, highest priority first; the names are the config file's keys.
INTERACTIVE_COMMANDS = "interactive_commands"
LARGE_FILE_VIEWING = "large_file_viewing"
SEARCH_ACTIVE = "search_active"

# The lists hold the common agent tools by their usual names, and `contextwm mcp`'s own tools
# where their kind puts them: reading, scrolling, the next page of a search and the memory
# tools change nothing a state shows (and need no state to be set first); an edit or a new
# search would.
# Allowed in every state but an exclusive one: analysis tools that change nothing.
BASE_TOOLS = (
    "project_analyze",
    "context_score_files",
    "task_detect",
    "dependency_graph",
    "success_patterns",
    "cross_project_insights",
    "smart_context_assembly",
    "read_file_chunk",
    "scroll_file",
    "search_files_next_page",
    "get_context",
    "search_history",
    "append_note",
)
# Allowed only while no state is active: tools that would change what a state is showing.
UNRESTRICTED_TOOLS = (
    "edit_files",
    "create_file",
    "search_files",
    "run_command",
    "edit_file",
)
# Each state's own tools, in priority order: a page through the command, the file or the
# results it is showing. A config file may shorten a list (see config.py).
DEFAULT_RESTRICTIONS: dict[str, tuple[str, ...]] = {
    INTERACTIVE_COMMANDS: ("send_input_to_command", "get_command_output", "terminate_command"),
    LARGE_FILE_VIEWING: ("scroll_file_chunk", "get_next_chunk", "get_previous_chunk"),
    SEARCH_ACTIVE: ("get_next_search_results", "get_search_chunk_details", "refine_search_query"),
}

MAX_STATE_CHARS = 64
_STATE_NAME = re.compile(r"[a-z0-9_.-]+")
# A refusal names at most this many of the allowed tools: a hint, short enough to read.
MAX_NAMED_TOOLS = 8


def default_rules() -> ToolRules:
    """The rules with no configuration: three states, interactive commands exclusive.

    Returns:
        interactive_commands (exclusive), then large_file_viewing, then search_active, each
        with tools of its own, over the base and unrestricted tools.
    """
    return ToolRules(
        base=BASE_TOOLS,
        unrestricted=UNRESTRICTED_TOOLS,
        restrictions=MappingProxyType(dict(DEFAULT_RESTRICTIONS)),
        exclusive=frozenset({INTERACTIVE_COMMANDS}),
    )


def check_state(name: str) -> str:
    """A session state's name, checked.

    Args:
        name: 1 to 64 characters of a-z, 0-9, `_`, `.` and `-`.

    Returns:
        name, unchanged.

    Raises:
        InvalidArgument: empty, too long, or another character.
    """
    if not name:
        raise InvalidArgument("a session state name must not be empty")
    if len(name) > MAX_STATE_CHARS:
        raise InvalidArgument(
            f"session state name {name[:16]!r}… has {len(name)} characters, over the limit"
            f" of {MAX_STATE_CHARS}"
        )
    if not _STATE_NAME.fullmatch(name):
        bad = sorted({c for c in name if not _STATE_NAME.fullmatch(c)})
        raise InvalidArgument(
            f"session state name {name!r} may hold only a-z, 0-9, '_', '.' and '-', not"
            f" {', '.join(repr(c) for c in bad)}"
        )
    return name


def available_tools(rules: ToolRules, states: Collection[str]) -> ToolAvailability:
    """The tools an agent may use now.

    Args:
        rules: which tools each state allows, states in priority order.
        states: the session's active states; those the rules do not name restrict nothing.

    Returns:
        The allowed tools in order (the state's own after the base tools, no repeats); the
        active states, those the rules name in priority order first, the others sorted;
        and the state that decided ("" when none did).
    """
    deciding = _deciding_state(rules, states)
    if not deciding:
        tools = _unique((*rules.base, *rules.unrestricted))
    elif deciding in rules.exclusive:
        tools = _unique(rules.restrictions[deciding])
    else:
        tools = _unique((*rules.base, *rules.restrictions[deciding]))
    named = [s for s in rules.restrictions if s in states]
    others = sorted(set(states) - set(named))
    return ToolAvailability(tools=tools, states=(*named, *others), deciding_state=deciding)


def check_tool(rules: ToolRules, states: Collection[str], tool: str) -> ToolCheck:
    """Whether an agent may use one tool now, and if not, why and what instead.

    Args:
        rules: which tools each state allows.
        states: the session's active states.
        tool: the tool's name.

    Returns:
        allowed, or a reason naming the state that forbids the tool (or the states it needs,
        or that no list knows it) and the tools allowed instead, e.g. "edit_files is not
        available while large_file_viewing is active; available: project_analyze, ...".
    """
    now = available_tools(rules, states)
    if tool in now.tools:
        return ToolCheck(tool=tool, allowed=True, reason="", deciding_state=now.deciding_state)
    instead = _named(now.tools)
    enabling = [s for s, tools in rules.restrictions.items() if tool in tools]
    if not enabling and tool not in rules.base and tool not in rules.unrestricted:
        reason = f"unknown tool {tool!r}: no list of the tool rules names it"
    elif now.deciding_state:
        reason = f"{tool} is not available while {now.deciding_state} is active"
    else:  # with no state deciding, only a state's own tools are missing
        reason = f"{tool} is only available while {' or '.join(enabling)} is active"
    return ToolCheck(
        tool=tool,
        allowed=False,
        reason=f"{reason}; available: {instead}",
        deciding_state=now.deciding_state,
    )


def _deciding_state(rules: ToolRules, states: Collection[str]) -> str:
    """The active state of highest priority that the rules name; "" when none."""
    return next((s for s in rules.restrictions if s in states), "")


def _unique(tools: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tools))


def _named(tools: tuple[str, ...]) -> str:
    """The tools as a short list: the first MAX_NAMED_TOOLS and how many more."""
    if not tools:
        return "none"
    shown = ", ".join(tools[:MAX_NAMED_TOOLS])
    more = len(tools) - MAX_NAMED_TOOLS
    return f"{shown} and {more} more" if more > 0 else shown
