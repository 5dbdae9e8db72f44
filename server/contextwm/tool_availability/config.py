"""Tool rules from the settings: the `[context_window]` tables that name states and tools.

The shape, every key optional:

    [context_window.tools]
    base = ["project_analyze", "task_detect"]        # allowed with no state and in any
                                                     # state that is not exclusive
    unrestricted = ["edit_files", "run_command"]     # allowed only while no state is active
    exclusive_states = ["interactive_commands"]      # states that allow only their own tools
    priority = ["review_mode"]                       # these states first, in this order

    [context_window.tool_restrictions]
    interactive_commands = ["send_input_to_command", "terminate_command"]
    review_mode = ["get_diff", "approve_change"]     # a custom state

How a table applies to the rules so far (the defaults for the first source, so a later
source changes only what it names, as the settings do):

- base, unrestricted and exclusive_states replace the list they name.
- A key under tool_restrictions replaces that state's tools; a new key adds a custom state.
  A state's tools cannot be removed, only emptied (it then allows the base tools alone).
- Priority: the states already known keep their order (by default interactive_commands,
  large_file_viewing, search_active), and new states follow in the order the table lists
  them (tomllib keeps it). priority, when given, moves the states it names to the top in
  its order; the others follow as they were.

Other keys of `[context_window]` belong to other settings and are not looked at here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.workspace_files import ToolRules
from contextwm.tool_availability.rules import check_state, default_rules

_TOOLS_KEYS = ("base", "unrestricted", "exclusive_states", "priority")
# Tool names as agent tool protocols spell them (letters, digits, `_`, `-`, `.`, `/`, `:`).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_./:-]{1,128}")


def rules_from_config(
    table: Mapping[str, Any], source: str, base: ToolRules | None = None
) -> ToolRules:
    """The tool rules a `[context_window]` table gives, over the rules so far.

    Args:
        table: the `[context_window]` table as tomllib reads it (see the module docstring).
        source: where the table comes from, as messages name it (a file's path).
        base: the rules before this source; default_rules() when None.

    Returns:
        The rules with the table applied.

    Raises:
        InvalidArgument: naming the source and the key: a table that is not one, an unknown
            key under `[context_window.tools]`, a list that is not of valid names or has a
            name twice, a state name that check_state refuses, an exclusive or priority
            state that no tool_restrictions key names, or an exclusive state with no tools.
    """
    rules = default_rules() if base is None else base
    tools = _table(table, "tools", source)
    unknown = sorted(set(tools) - set(_TOOLS_KEYS))
    if unknown:
        raise InvalidArgument(
            f"{source}: unknown setting context_window.tools.{unknown[0]} (known:"
            f" {', '.join(_TOOLS_KEYS)})"
        )
    restrictions = dict(rules.restrictions)
    for key, value in _table(table, "tool_restrictions", source).items():
        where = f"context_window.tool_restrictions.{key}"
        try:
            state = check_state(key)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{source}: {where}: {exc.message}") from None
        restrictions[state] = _names(value, where, source)
    exclusive = rules.exclusive
    if "exclusive_states" in tools:
        exclusive = frozenset(
            _states(tools["exclusive_states"], "exclusive_states", restrictions, source)
        )
    order = list(restrictions)
    if "priority" in tools:
        first = _states(tools["priority"], "priority", restrictions, source)
        order = [*first, *(s for s in order if s not in first)]
    for state in sorted(exclusive):
        if state in restrictions and not restrictions[state]:
            raise InvalidArgument(
                f"{source}: context_window.tool_restrictions.{state} is empty, but the state is"
                " exclusive: while it is active the agent would have no tool at all"
            )
    base_tools, unrestricted = rules.base, rules.unrestricted
    if "base" in tools:
        base_tools = _names(tools["base"], "context_window.tools.base", source)
    if "unrestricted" in tools:
        unrestricted = _names(tools["unrestricted"], "context_window.tools.unrestricted", source)
    return ToolRules(
        base=base_tools,
        unrestricted=unrestricted,
        restrictions=MappingProxyType({s: restrictions[s] for s in order}),
        exclusive=exclusive,
    )


def _table(table: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    """A sub-table of `[context_window]`; empty when absent."""
    value = table.get(key, {})
    if not isinstance(value, Mapping):
        raise InvalidArgument(
            f"{source}: context_window.{key} must be a table ([context_window.{key}]), got"
            f" {type(value).__name__}"
        )
    return value


def _names(value: Any, where: str, source: str) -> tuple[str, ...]:
    """A list of tool names, checked: strings of the allowed characters, none twice."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidArgument(f"{source}: {where} must be a list of tool names, got {value!r}")
    for name in value:
        if not _TOOL_NAME.fullmatch(name):
            raise InvalidArgument(
                f"{source}: {where}: tool name {name!r} must be 1 to 128 letters, digits or"
                " '_', '-', '.', '/', ':'"
            )
    twice = sorted({n for n in value if value.count(n) > 1})
    if twice:
        raise InvalidArgument(f"{source}: {where} names {twice[0]!r} more than once")
    return tuple(value)


def _states(
    value: Any, key: str, restrictions: Mapping[str, tuple[str, ...]], source: str
) -> list[str]:
    """A list of states under `[context_window.tools]`, each one tool_restrictions names."""
    where = f"context_window.tools.{key}"
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidArgument(f"{source}: {where} must be a list of state names, got {value!r}")
    for name in value:
        if name not in restrictions:
            raise InvalidArgument(
                f"{source}: {where} names {name!r}, which is not a state of"
                f" context_window.tool_restrictions (states: {', '.join(restrictions)})"
            )
    if len(set(value)) != len(value):
        raise InvalidArgument(f"{source}: {where} names a state more than once")
    return list(value)
