"""Context-dependent tool availability: which tools an agent may use in its session's states,
and the rules for that from the settings."""

from contextwm.tool_availability.config import rules_from_config
from contextwm.tool_availability.rules import (
    BASE_TOOLS,
    INTERACTIVE_COMMANDS,
    LARGE_FILE_VIEWING,
    SEARCH_ACTIVE,
    UNRESTRICTED_TOOLS,
    available_tools,
    check_state,
    check_tool,
    default_rules,
)

__all__ = [
    "BASE_TOOLS",
    "INTERACTIVE_COMMANDS",
    "LARGE_FILE_VIEWING",
    "SEARCH_ACTIVE",
    "UNRESTRICTED_TOOLS",
    "available_tools",
    "check_state",
    "check_tool",
    "default_rules",
    "rules_from_config",
]
