"""``--agent api``: the VLM agent (:mod:`.agent`), its chat messages (:mod:`.messages`) and
reply parsing (:mod:`.parsing`); the chat client itself is :mod:`habitat_mosnav.chat`."""

from habitat_mosnav.agents.vlm.agent import (
    DEFAULT_API_BASE,
    APIAgent,
    APIError,
    APIRequestError,
    APIUnavailableError,
    UnparseableReplyError,
)

__all__ = [
    "APIAgent",
    "APIError",
    "APIRequestError",
    "APIUnavailableError",
    "DEFAULT_API_BASE",
    "UnparseableReplyError",
]
