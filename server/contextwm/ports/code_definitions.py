"""The DefinitionParser port: where a source file's definitions begin and end."""

from __future__ import annotations

from typing import Protocol

from contextwm.domain.workspace_files import FileDefinitions


class DefinitionParser(Protocol):
    """Finds definition boundaries with a real parser for the file's language."""

    def definitions(self, path: str, text: str) -> FileDefinitions:
        """The top-level definitions of a file and the ones nested in them.

        Args:
            path: the file's name; its suffix chooses the language.
            text: the file's text.

        Returns:
            The definitions; with `problem` set, and none, when the file's language has no
            parser or the parser could not make sense of the file. Never raises for a file.
        """
        ...
