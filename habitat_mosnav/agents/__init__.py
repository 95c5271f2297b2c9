"""Agents shipped with the benchmark, agent loading and the action protocols.

Nothing here imports torch or habitat; the oracle touches the simulator only through the
``habitat.Env`` handed to its ``bind_env``.
"""

from habitat_mosnav.agents.legacy import LegacyAgentAdapter, adapt_agent, has_legacy_act
from habitat_mosnav.agents.loading import (
    AGENT_ALIASES,
    AgentLoadError,
    instantiate_agent,
    load_agent,
    resolve_agent,
)
from habitat_mosnav.agents.protocols import (
    HABITAT_ACTIONS,
    InvalidAction,
    ProtocolStep,
    map_action,
)
from habitat_mosnav.agents.random_agent import RandomAgent

__all__ = [
    "AGENT_ALIASES",
    "AgentLoadError",
    "HABITAT_ACTIONS",
    "InvalidAction",
    "LegacyAgentAdapter",
    "ProtocolStep",
    "RandomAgent",
    "adapt_agent",
    "has_legacy_act",
    "instantiate_agent",
    "load_agent",
    "map_action",
    "resolve_agent",
]
