"""The client's Literal vocabularies hold exactly the names of the proto enums and the server."""

from __future__ import annotations

import enum
from typing import Any, Literal, get_args, get_origin

import contextwm_client
import pytest
from contextwm.domain.active import Treatment
from contextwm.domain.categories import Category, ContributorType
from contextwm.domain.conversations import ConversationState
from contextwm.domain.facts import FactKind
from contextwm.domain.history import EditKind, EventKind
from contextwm.domain.items import FILE_KINDS, FLAG_BY_NAME, ROLES, ItemState
from contextwm.llm_context.truncation_ranges import TruncationStrategy
from contextwm_client import _vocabulary as vocabulary
from contextwm_client.v1 import contextwm_pb2 as pb


def enum_names(enum_type: Any, prefix: str) -> set[str]:
    """The lower-case names of a proto enum without its prefix, "unspecified" left out."""
    return {name.removeprefix(prefix).lower() for name, number in enum_type.items() if number}


def values(server_enum: type[enum.Enum]) -> set[str]:
    return {str(member.value) for member in server_enum}


@pytest.mark.parametrize(
    ("literal", "names"),
    [
        (vocabulary.ItemState, enum_names(pb.ItemState, "ITEM_STATE_")),
        (vocabulary.ItemState, {state.name.lower() for state in ItemState}),
        (vocabulary.ConversationState, enum_names(pb.ConversationState, "CONVERSATION_STATE_")),
        (vocabulary.ConversationState, values(ConversationState)),
        (vocabulary.RetrievalMode, enum_names(pb.RetrievalMode, "RETRIEVAL_MODE_")),
        (vocabulary.Category, enum_names(pb.Category, "CATEGORY_")),
        (vocabulary.Category, values(Category)),
        (vocabulary.ContributorType, enum_names(pb.ContributorType, "CONTRIBUTOR_TYPE_")),
        (vocabulary.ContributorType, values(ContributorType)),
        (vocabulary.Role, set(ROLES)),
        (vocabulary.Flag, set(FLAG_BY_NAME)),
        (vocabulary.FileKind, set(FILE_KINDS)),
        (vocabulary.TruncationStrategy, values(TruncationStrategy)),
        (vocabulary.Treatment, values(Treatment)),
        (vocabulary.FactKind, values(FactKind)),
        (vocabulary.EditKind, values(EditKind)),
        (vocabulary.EventKind, values(EventKind)),
    ],
)
def test_vocabulary_matches_the_wire(literal: Any, names: set[str]) -> None:
    assert set(get_args(literal)) == names


def test_vocabularies_are_exported() -> None:
    aliases = [name for name, value in vars(vocabulary).items() if get_origin(value) is Literal]
    assert len(aliases) >= 15
    for name in aliases:
        assert getattr(contextwm_client, name) is getattr(vocabulary, name), name
        assert name in contextwm_client.__all__
