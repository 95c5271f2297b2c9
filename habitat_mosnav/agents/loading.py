"""Resolve ``--agent random | human | api | oracle | package.module:Class | file.py:Class``.

Errors are :class:`AgentLoadError` with a one-line message naming the spec, so the CLI can
print it and exit 2 instead of showing an import traceback.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from typing import Any, Callable, Optional

__all__ = [
    "AGENT_ALIASES",
    "AgentLoadError",
    "agent_code_digest",
    "resolve_agent",
    "instantiate_agent",
    "load_agent",
]

AGENT_ALIASES = {
    "random": "habitat_mosnav.agents.random_agent:RandomAgent",
    "human": "habitat_mosnav.agents.human:HumanAgent",
    "api": "habitat_mosnav.agents.vlm:APIAgent",
    "oracle": "habitat_mosnav.agents.oracle:OracleAgent",
}


#: The original benchmark's template modules, found here when the working directory has no
#: module of that name: its README's ``--agent agents_to_test.simple_agent:SimpleAgent``.
ORIGINAL_TEMPLATES = {"agents_to_test.simple_agent": "habitat_mosnav.agents.simple_agent"}


class AgentLoadError(ValueError):
    """The agent spec cannot be resolved or the agent cannot be built."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _import_file(path: str, spec: str):
    if not os.path.isfile(path):
        raise AgentLoadError(f"--agent {spec}: file {path!r} does not exist")
    name = "mosnav_user_agent_" + os.path.splitext(os.path.basename(path))[0]
    mspec = importlib.util.spec_from_file_location(name, path)
    if mspec is None or mspec.loader is None:
        raise AgentLoadError(f"--agent {spec}: cannot import {path!r} as a Python file")
    module = importlib.util.module_from_spec(mspec)
    sys.modules[name] = module
    try:
        mspec.loader.exec_module(module)
    except KeyboardInterrupt:
        sys.modules.pop(name, None)
        raise
    except BaseException as exc:  # noqa: B902 - the user's module failed while importing
        # (SystemExit included: sys.exit() in an agent's module never sets our exit code)
        sys.modules.pop(name, None)
        raise AgentLoadError(
            f"--agent {spec}: importing {path!r} failed: {_one_line(exc)}"
        ) from exc
    return module


def _import_module(module_name: str, spec: str):
    # Console scripts do not put the working directory on sys.path; `python run_eval.py`
    # did, and users keep their agents next to where they run the command.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        if module_name in ORIGINAL_TEMPLATES and (
            missing == module_name or module_name.startswith(missing + ".")
        ):
            return importlib.import_module(ORIGINAL_TEMPLATES[module_name])
        if missing == module_name or module_name.startswith(missing + "."):
            raise AgentLoadError(
                f"--agent {spec}: no module named {module_name!r} (run from the directory "
                "that contains it, or install it)"
            ) from exc
        raise AgentLoadError(
            f"--agent {spec}: module {module_name!r} needs {missing!r}, which is not installed"
        ) from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: B902 - SystemExit too: never our exit code
        raise AgentLoadError(
            f"--agent {spec}: importing {module_name!r} failed: {_one_line(exc)}"
        ) from exc


def agent_code_digest(agent: Any) -> Optional[str]:
    """sha256 over the source files of the modules that define the agent's class and its
    bases (``run.json``'s ``agent_code_sha256``): a resume after the agent's code changed
    is refused, even with the same ``--agent`` string. None when no file is known."""
    cls = agent if isinstance(agent, type) else type(agent)
    files = {}
    for klass in cls.__mro__:
        module = sys.modules.get(getattr(klass, "__module__", ""))
        path = getattr(module, "__file__", None)
        if klass is not object and path and os.path.isfile(path):
            files[klass.__module__] = path
    if not files:
        return None
    h = hashlib.sha256()
    for name in sorted(files):
        with open(files[name], "rb") as f:
            h.update(name.encode("utf-8") + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def resolve_agent(spec: str) -> Callable[..., Any]:
    """Return the agent class (or factory) named by ``spec``, without instantiating it."""
    if not isinstance(spec, str) or not spec.strip():
        raise AgentLoadError(
            "--agent is empty: expected random, human, api, oracle or package.module:Class"
        )
    spec = spec.strip()
    target = AGENT_ALIASES.get(spec, spec)
    if ":" not in target:
        raise AgentLoadError(
            f"unknown agent {spec!r}: expected random, human, api, oracle, "
            "package.module:Class or path/to/file.py:Class"
        )
    module_part, _, attr = target.rpartition(":")
    if not module_part or not attr:
        raise AgentLoadError(f"--agent {spec}: expected package.module:Class")
    if module_part.endswith(".py") or os.sep in module_part:
        module = _import_file(module_part, spec)
    else:
        module = _import_module(module_part, spec)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AgentLoadError(
                f"--agent {spec}: module {module_part!r} has no attribute {attr!r}"
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise AgentLoadError(f"--agent {spec}: {attr!r} is not a class or factory")
    return obj


def instantiate_agent(factory: Callable[..., Any], spec: str, args: Optional[Any] = None):
    """Build the agent: ``factory.from_args(args)`` when it has one, else ``factory()``."""
    try:
        if args is not None and callable(getattr(factory, "from_args", None)):
            agent = factory.from_args(args)
        else:
            agent = factory()
    except (AgentLoadError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: B902 - SystemExit too: never our exit code
        raise AgentLoadError(
            f"--agent {spec}: constructing the agent failed: {_one_line(exc)}"
        ) from exc
    if not callable(getattr(agent, "act", None)):
        raise AgentLoadError(f"--agent {spec}: {type(agent).__name__} has no act() method")
    return agent


def load_agent(
    spec: str,
    args: Optional[Any] = None,
    legacy_api: bool = False,
    note: Optional[Callable[[str], None]] = None,
):
    """Resolve and build the agent; ``legacy_api`` (or an ``act(rgb, depth, prompt)``
    signature, see :func:`~habitat_mosnav.agents.legacy.adapt_agent`) wraps it for the
    old call."""
    from habitat_mosnav.agents.legacy import adapt_agent

    return adapt_agent(instantiate_agent(resolve_agent(spec), spec, args), legacy_api, note)
