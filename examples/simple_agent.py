"""The agent template now ships inside the package (so ``pip install`` users have it too):
``habitat_mosnav/agents/simple_agent.py`` — copy that file. This module keeps the old
``--agent examples.simple_agent:SimpleAgent`` (run from the repository root) working."""

from habitat_mosnav.agents.simple_agent import SimpleAgent  # noqa: F401
