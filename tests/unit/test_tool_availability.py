"""Tests for contextwm.tool_availability: the rules, their priorities, and the config."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.workspace_files import ToolRules
from contextwm.tool_availability import (
    BASE_TOOLS,
    INTERACTIVE_COMMANDS,
    LARGE_FILE_VIEWING,
    SEARCH_ACTIVE,
    UNRESTRICTED_TOOLS,
    available_tools,
    check_state,
    check_tool,
    default_rules,
    rules_from_config,
)

RULES = default_rules()


def context_window(text: str) -> dict[str, Any]:
    """The [context_window] table of a TOML document."""
    table = tomllib.loads(text)["context_window"]
    assert isinstance(table, dict)
    return table


# --- the defaults ------------------------------------------------------------------------


def test_defaults_name_three_states_in_priority_order() -> None:
    assert list(RULES.restrictions) == [INTERACTIVE_COMMANDS, LARGE_FILE_VIEWING, SEARCH_ACTIVE]
    assert RULES.exclusive == {INTERACTIVE_COMMANDS}
    assert len(RULES.base) == 13
    assert RULES.unrestricted == (
        "edit_files",
        "create_file",
        "search_files",
        "run_command",
        "edit_file",
    )
    assert RULES.restrictions[LARGE_FILE_VIEWING] == (
        "scroll_file_chunk",
        "get_next_chunk",
        "get_previous_chunk",
    )


def test_every_tool_of_the_mcp_server_has_a_place_in_the_defaults() -> None:
    from contextwm.mcp_server.tools import SESSION_TOOLS, TOOL_NAMES

    placed = {
        *RULES.base,
        *RULES.unrestricted,
        *(t for ts in RULES.restrictions.values() for t in ts),
    }
    assert set(TOOL_NAMES) - set(SESSION_TOOLS) <= placed
    assert not set(SESSION_TOOLS) & placed  # never gated: the way out of a state


def test_no_state_allows_base_and_unrestricted_tools() -> None:
    now = available_tools(RULES, ())
    assert now.tools == (*BASE_TOOLS, *UNRESTRICTED_TOOLS)
    assert (now.states, now.deciding_state) == ((), "")


def test_a_state_allows_base_plus_its_own_tools() -> None:
    now = available_tools(RULES, {LARGE_FILE_VIEWING})
    assert now.tools == (*BASE_TOOLS, *RULES.restrictions[LARGE_FILE_VIEWING])
    assert now.deciding_state == LARGE_FILE_VIEWING
    assert "edit_files" not in now.tools


def test_the_exclusive_state_allows_only_its_own_tools() -> None:
    now = available_tools(RULES, {INTERACTIVE_COMMANDS})
    assert now.tools == ("send_input_to_command", "get_command_output", "terminate_command")


def test_the_highest_priority_state_decides() -> None:
    now = available_tools(RULES, [SEARCH_ACTIVE, LARGE_FILE_VIEWING])
    assert now.deciding_state == LARGE_FILE_VIEWING
    assert now.states == (LARGE_FILE_VIEWING, SEARCH_ACTIVE)
    assert "get_next_search_results" not in now.tools
    now = available_tools(RULES, [SEARCH_ACTIVE, INTERACTIVE_COMMANDS, LARGE_FILE_VIEWING])
    assert now.deciding_state == INTERACTIVE_COMMANDS
    assert now.tools == RULES.restrictions[INTERACTIVE_COMMANDS]


def test_states_the_rules_do_not_name_restrict_nothing() -> None:
    now = available_tools(RULES, {"zeta", "alpha"})
    assert now.deciding_state == ""
    assert now.states == ("alpha", "zeta")
    assert now.tools == (*BASE_TOOLS, *UNRESTRICTED_TOOLS)
    now = available_tools(RULES, {"zeta", SEARCH_ACTIVE})
    assert (now.states, now.deciding_state) == ((SEARCH_ACTIVE, "zeta"), SEARCH_ACTIVE)


def test_a_tool_in_base_and_a_state_is_listed_once() -> None:
    rules = ToolRules(base=("a", "b"), unrestricted=("c",), restrictions={"s": ("b", "d")})
    assert available_tools(rules, {"s"}).tools == ("a", "b", "d")


# --- check_tool --------------------------------------------------------------------------


def test_an_allowed_tool_has_no_reason() -> None:
    check = check_tool(RULES, {SEARCH_ACTIVE}, "refine_search_query")
    assert check.allowed
    assert (check.reason, check.deciding_state) == ("", SEARCH_ACTIVE)


def test_the_reason_names_the_forbidding_state_and_what_is_available() -> None:
    check = check_tool(RULES, {LARGE_FILE_VIEWING}, "edit_files")
    assert not check.allowed
    assert check.deciding_state == LARGE_FILE_VIEWING
    assert check.reason.startswith(
        "edit_files is not available while large_file_viewing is active; available:"
        " project_analyze, context_score_files,"
    )
    # Sixteen tools are allowed: eight named, the rest counted.
    assert check.reason.endswith("and 8 more")


def test_the_reason_under_the_exclusive_state_lists_its_tools() -> None:
    check = check_tool(RULES, {INTERACTIVE_COMMANDS, SEARCH_ACTIVE}, "project_analyze")
    assert check.reason == (
        "project_analyze is not available while interactive_commands is active; available:"
        " send_input_to_command, get_command_output, terminate_command"
    )


def test_a_state_tool_without_its_state_names_the_state_it_needs() -> None:
    check = check_tool(RULES, (), "get_next_chunk")
    assert not check.allowed
    assert check.reason.startswith(
        "get_next_chunk is only available while large_file_viewing is active; available:"
    )


def test_an_unknown_tool_is_refused_as_unknown() -> None:
    for states in [(), {LARGE_FILE_VIEWING}]:
        check = check_tool(RULES, states, "rm_rf")
        assert not check.allowed
        assert check.reason.startswith("unknown tool 'rm_rf'")


def test_no_tool_at_all_reads_none() -> None:
    rules = ToolRules(base=(), unrestricted=(), restrictions={"s": ()})
    assert check_tool(rules, (), "x").reason.endswith("available: none")


# --- check_state -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "search_active", "v1.review-mode", "x" * 64])
def test_valid_state_names(name: str) -> None:
    assert check_state(name) == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must not be empty"),
        ("x" * 65, "65 characters, over the limit of 64"),
        ("Search", r"only a-z.*not 'S'"),
        ("two words", r"not ' '"),
        ("a/b", r"not '/'"),
    ],
)
def test_invalid_state_names(name: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_state(name)


# --- rules_from_config -------------------------------------------------------------------


def test_an_empty_table_gives_the_defaults() -> None:
    assert rules_from_config({}, "c.toml") == RULES
    assert rules_from_config({"max_lines_per_chunk": 100}, "c.toml") == RULES


def test_a_state_list_replaces_the_default_list() -> None:
    rules = rules_from_config(
        context_window("""
            [context_window.tool_restrictions]
            interactive_commands = ["send_input_to_command", "terminate_command"]
            large_file_viewing = ["scroll_file_chunk", "get_next_chunk"]
            search_active = ["get_next_search_results", "refine_search_query"]
        """),
        "c.toml",
    )
    assert rules.restrictions[INTERACTIVE_COMMANDS] == (
        "send_input_to_command",
        "terminate_command",
    )
    assert list(rules.restrictions) == list(RULES.restrictions)
    assert (rules.base, rules.exclusive) == (RULES.base, RULES.exclusive)


def test_custom_states_follow_the_known_ones_in_table_order() -> None:
    rules = rules_from_config(
        context_window("""
            [context_window.tool_restrictions]
            zz_review = ["approve_change"]
            search_active = ["refine_search_query"]
            aa_debug = ["step", "inspect"]
        """),
        "c.toml",
    )
    assert list(rules.restrictions) == [
        INTERACTIVE_COMMANDS,
        LARGE_FILE_VIEWING,
        SEARCH_ACTIVE,
        "zz_review",
        "aa_debug",
    ]
    now = available_tools(rules, {"aa_debug", "zz_review"})
    assert now.deciding_state == "zz_review"
    assert now.tools == (*BASE_TOOLS, "approve_change")


def test_priority_moves_the_states_it_names_to_the_top() -> None:
    rules = rules_from_config(
        context_window("""
            [context_window.tools]
            priority = ["review", "search_active"]
            [context_window.tool_restrictions]
            review = ["approve_change"]
        """),
        "c.toml",
    )
    assert list(rules.restrictions) == [
        "review",
        SEARCH_ACTIVE,
        INTERACTIVE_COMMANDS,
        LARGE_FILE_VIEWING,
    ]
    assert available_tools(rules, {INTERACTIVE_COMMANDS, "review"}).deciding_state == "review"


def test_tools_table_replaces_base_unrestricted_and_exclusive() -> None:
    rules = rules_from_config(
        context_window("""
            [context_window.tools]
            base = ["task_detect"]
            unrestricted = ["edit_files"]
            exclusive_states = ["review"]
            [context_window.tool_restrictions]
            review = ["approve_change"]
        """),
        "c.toml",
    )
    assert (rules.base, rules.unrestricted) == (("task_detect",), ("edit_files",))
    assert rules.exclusive == {"review"}
    assert available_tools(rules, {"review"}).tools == ("approve_change",)
    # interactive_commands is no longer exclusive: the base tools come with it.
    assert available_tools(rules, {INTERACTIVE_COMMANDS}).tools[0] == "task_detect"
    assert available_tools(rules, ()).tools == ("task_detect", "edit_files")


def test_a_later_source_changes_only_what_it_names() -> None:
    first = rules_from_config(
        context_window("""
            [context_window.tools]
            base = ["task_detect"]
            [context_window.tool_restrictions]
            review = ["approve_change"]
        """),
        "file.toml",
    )
    second = rules_from_config(
        {"tool_restrictions": {"review": ["approve_change", "reject_change"]}}, "flags", first
    )
    assert second.base == ("task_detect",)
    assert second.restrictions["review"] == ("approve_change", "reject_change")
    assert second.exclusive == RULES.exclusive


def test_the_rules_are_read_only() -> None:
    rules = rules_from_config({"tool_restrictions": {"s": ["t"]}}, "c.toml")
    with pytest.raises(TypeError):
        rules.restrictions["s"] = ()  # type: ignore[index]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"tools": ["x"]}, r"c\.toml: context_window\.tools must be a table"),
        ({"tool_restrictions": "x"}, r"context_window\.tool_restrictions must be a table"),
        ({"tools": {"bases": []}}, r"unknown setting context_window\.tools\.bases \(known:"),
        (
            {"tool_restrictions": {"Search": ["x"]}},
            r"c\.toml: context_window\.tool_restrictions\.Search: session state name",
        ),
        (
            {"tool_restrictions": {"s": "x"}},
            r"context_window\.tool_restrictions\.s must be a list of tool names",
        ),
        ({"tool_restrictions": {"s": ["ok", 3]}}, r"tool_restrictions\.s must be a list"),
        ({"tool_restrictions": {"s": ["two words"]}}, r"tool name 'two words' must be"),
        ({"tool_restrictions": {"s": [""]}}, r"tool name '' must be"),
        ({"tool_restrictions": {"s": ["a", "b", "a"]}}, r"names 'a' more than once"),
        ({"tools": {"base": "project_analyze"}}, r"context_window\.tools\.base must be a list"),
        ({"tools": {"unrestricted": [1]}}, r"context_window\.tools\.unrestricted must be"),
        (
            {"tools": {"exclusive_states": ["nope"]}},
            r"exclusive_states names 'nope', which is not a state .*\(states: interactive_",
        ),
        ({"tools": {"priority": ["nope"]}}, r"context_window\.tools\.priority names 'nope'"),
        (
            {"tools": {"priority": ["search_active", "search_active"]}},
            r"priority names a state more than once",
        ),
        (
            {"tool_restrictions": {"interactive_commands": []}},
            r"interactive_commands is empty, but the state is exclusive",
        ),
    ],
)
def test_bad_config_names_the_source_and_the_key(table: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message) as info:
        rules_from_config(table, "c.toml")
    assert info.value.message.startswith("c.toml: ")


def test_an_empty_state_that_is_not_exclusive_allows_the_base_tools() -> None:
    rules = rules_from_config({"tool_restrictions": {"search_active": []}}, "c.toml")
    assert available_tools(rules, {SEARCH_ACTIVE}).tools == BASE_TOOLS
