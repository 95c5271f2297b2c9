"""``--agent api``: a VLM agent that asks any OpenAI-compatible chat-completions server.

Each step sends the task prompt, the goal text, the current RGB (and optionally the depth
as a colour-coded image) and a bounded history of previous actions; the reply is parsed
into an action id (strict ``ACTION: <id>`` / JSON, then a tolerant fallback). Works with
vLLM, SGLang, llama.cpp, Ollama's ``/v1`` and hosted APIs, through :mod:`habitat_mosnav.chat`.

    mosnav-eval --agent api --api-base http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-VL-7B-Instruct

The key comes from ``$OPENAI_API_KEY`` (or the variable named by ``--api-key-env``), else
from a ``.env`` file; it is only ever put in the ``Authorization`` header — never in
logs, records, ``repr`` or error messages. A server that stays down raises
:class:`APIUnavailableError` after a bounded wait, so the rollout records the episode as
``error`` instead of hanging. Per-episode counters for the record's ``extras`` come from
:meth:`APIAgent.episode_stats`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import numbers
import os
import re
import sys
import time
from collections import deque
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Deque, Dict, List, Optional, Tuple, Union

import numpy as np

from habitat_mosnav.chat import (
    APIError,
    APIRequestError,
    APIUnavailableError,
    ChatClient,
    env_value,
    load_api_key,
)
from habitat_mosnav.agents.vlm.messages import (
    REPAIR_PROMPT,
    SYSTEM_PROMPT,
    EncodedImage,
    build_messages,
    depth_to_image,
    encode_image,
    loggable_messages,
    rgb_to_image,
    user_text,
)
from habitat_mosnav.agents.vlm.parsing import ACTION_NAMES, VALID_ACTION_IDS, parse_action
from habitat_mosnav.safety import make_dirs, mask_secrets, open_file, safe_line

__all__ = [
    "APIAgent",
    "APIError",
    "APIUnavailableError",
    "APIRequestError",
    "UnparseableReplyError",
    "DEFAULT_API_BASE",
    "LOG_FIELD_LIMIT",
]

DEFAULT_API_BASE = "https://api.openai.com/v1"
UNPARSEABLE_POLICIES = ("retry", "default", "error")
#: Most bytes (UTF-8) of one text field written to ``prompts.jsonl``; a longer one keeps its
#: start and ends in ``...[N bytes left out]``.
LOG_FIELD_LIMIT = 64 * 1024


class UnparseableReplyError(APIError):
    """``--on-unparseable error``: the model's reply named no action (after the re-asks)."""


def _stats_zero() -> Dict[str, Any]:
    return {
        "api_calls": 0,  # HTTP requests sent, retries included
        "api_retries": 0,  # requests repeated after a 5xx, time-out or dropped connection
        "unparseable_replies": 0,  # replies that named no valid action
        "reasks": 0,  # follow-up requests asking the model to fix its format
        "defaulted_actions": 0,  # steps that fell back to --default-action
        "tolerant_parses": 0,  # replies read by the fallback (names / bare ids), not the strict format
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "api_latency_s": 0.0,
    }


def _action_choice(value: str) -> int:
    """argparse type for ``--default-action``: an id or a name (``TURN_LEFT``)."""
    text = str(value).strip()
    if re.fullmatch(r"\d+", text):
        aid = int(text)
    else:
        names = {n.lower(): i for i, n in ACTION_NAMES.items()}
        aid = names.get(text.lower().replace("-", "_").replace(" ", "_"), -1)
    if aid not in VALID_ACTION_IDS:
        raise argparse.ArgumentTypeError(
            f"--default-action {value!r}: expected one of {sorted(VALID_ACTION_IDS)} or an action name"
        )
    return aid


class APIAgent:
    """An agent (SPEC §7) backed by an OpenAI-compatible chat-completions endpoint."""

    def __init__(
        self,
        model: str,
        api_base: str = DEFAULT_API_BASE,
        api_key: Optional[str] = None,
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
        image_size: int = 512,
        image_format: str = "png",
        history_length: int = 8,
        send_depth: bool = False,
        max_depth: float = 10.0,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        on_unparseable: str = "retry",
        unparseable_retries: int = 2,
        default_action: int = 2,
        tolerant: bool = True,
        extra_body: Optional[Dict[str, Any]] = None,
        system_prompt: Optional[str] = SYSTEM_PROMPT,
        log_path: Union[str, Path, None] = None,
        log_images: bool = False,
    ):
        if not model:
            raise ValueError("--agent api needs --model NAME (the model name the server serves)")
        if on_unparseable not in UNPARSEABLE_POLICIES:
            raise ValueError(
                f"--on-unparseable: expected one of {UNPARSEABLE_POLICIES}, got {on_unparseable!r}"
            )
        if int(default_action) not in VALID_ACTION_IDS:
            raise ValueError(
                f"--default-action: {default_action} is not an action id {sorted(VALID_ACTION_IDS)}"
            )
        if (
            history_length < 0
            or unparseable_retries < 0
            or max_tokens <= 0
            or image_size < 0
            or max_depth <= 0
        ):
            raise ValueError(
                "--history-length, --unparseable-retries and --image-size must be >= 0; "
                "--max-tokens and --depth-max > 0"
            )
        self.model = model
        self.client = ChatClient(
            api_base, api_key, timeout=timeout, retries=retries, backoff=backoff
        )
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.image_size = int(image_size)
        self.image_format = image_format
        self.history_length = int(history_length)
        self.send_depth = bool(send_depth)
        self.max_depth = float(max_depth)
        self.on_unparseable = on_unparseable
        self.unparseable_retries = int(unparseable_retries)
        self.default_action = int(default_action)
        self.tolerant = bool(tolerant)
        self.extra_body = dict(extra_body or {})
        for reserved in ("model", "messages"):
            if reserved in self.extra_body:
                raise ValueError(f"--api-extra-body may not set {reserved!r}")
        self.system_prompt = system_prompt
        self.log_path: Optional[Path] = None
        self.log_images = bool(log_images)
        self.set_log_path(log_path)
        self._history: Deque[Tuple[int, int, str]] = deque(maxlen=max(self.history_length, 1))
        self._stats = _stats_zero()
        self._total = _stats_zero()
        self._episode_index = -1
        self._step = 0
        self._goal_cache: Optional[Tuple[Any, EncodedImage]] = None

    def __repr__(self) -> str:  # never shows the key
        return f"APIAgent(model={self.model!r}, url={self.client.url!r})"

    # ------------------------------------------------------------------ CLI glue
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add the ``--agent api`` flags (in their own group) to the eval CLI's parser."""
        g = parser.add_argument_group("API agent (--agent api, OpenAI-compatible chat server)")
        g.add_argument(
            "--api-base",
            default=None,
            help="server base URL, e.g. http://127.0.0.1:8000/v1 "
            f"(default: $OPENAI_BASE_URL, else {DEFAULT_API_BASE})",
        )
        g.add_argument("--model", default=None, help="model name as the server knows it (required)")
        g.add_argument(
            "--api-key-env",
            default="OPENAI_API_KEY",
            help="environment variable (or .env entry) holding the key (default: OPENAI_API_KEY); "
            "local servers need none",
        )
        g.add_argument(
            "--env-file",
            default=".env",
            help="a .env file read for the key and base URL (default: ./.env)",
        )
        g.add_argument(
            "--temperature", type=float, default=0.0, help="sampling temperature (default: 0)"
        )
        g.add_argument(
            "--max-tokens", type=int, default=256, help="max tokens per reply (default: 256)"
        )
        g.add_argument(
            "--image-size",
            type=int,
            default=512,
            help="shrink images so the longer side is at most this many pixels; 0 = as rendered (default: 512)",
        )
        g.add_argument(
            "--image-format",
            choices=("png", "jpeg"),
            default="png",
            help="image encoding (default: png)",
        )
        g.add_argument(
            "--history-length",
            type=int,
            default=8,
            help="previous actions listed in each prompt; 0 = none (default: 8)",
        )
        g.add_argument(
            "--send-depth", action="store_true", help="also send the depth image, colour-coded"
        )
        g.add_argument(
            "--depth-max",
            type=float,
            default=10.0,
            help="with --send-depth: metres shown as 'far' in the colour-coded depth (default: 10)",
        )
        g.add_argument(
            "--api-timeout",
            type=float,
            default=60.0,
            help="seconds per attempt, from connect to the last byte of the reply (default: 60)",
        )
        g.add_argument(
            "--api-retries",
            type=int,
            default=3,
            help="repeats after a 5xx/408/409/425/429 answer, time-out or dropped connection (default: 3)",
        )
        g.add_argument(
            "--api-backoff",
            type=float,
            default=1.0,
            help="first back-off in seconds, doubled per retry, capped at 30 (default: 1)",
        )
        g.add_argument(
            "--on-unparseable",
            choices=UNPARSEABLE_POLICIES,
            default="retry",
            help="reply without a valid action: ask again (--unparseable-retries times) then use "
            "--default-action; use it at once; or fail the episode (default: retry)",
        )
        g.add_argument(
            "--unparseable-retries",
            type=int,
            default=2,
            help="re-asks after an unparseable reply with --on-unparseable retry (default: 2)",
        )
        g.add_argument(
            "--default-action",
            type=_action_choice,
            default=2,
            help="action used for an unparseable reply, id or name (default: 2 = TURN_LEFT)",
        )
        g.add_argument(
            "--strict-reply",
            action="store_true",
            help="accept only 'ACTION: <id>' or JSON replies, no tolerant fallback",
        )
        g.add_argument(
            "--api-extra-body",
            default=None,
            metavar="JSON",
            help="extra request fields, e.g. '{\"top_p\": 0.9}' or vLLM's "
            '\'{"chat_template_kwargs": {"enable_thinking": false}}\'',
        )
        g.add_argument(
            "--system-prompt-file",
            default=None,
            help="replace the built-in system prompt with this file",
        )
        g.add_argument(
            "--log-prompt-images",
            action="store_true",
            help="with --log-prompts, also save the images sent, as PNG beside the prompt log",
        )

    @classmethod
    def from_args(cls, args: Any) -> "APIAgent":
        """Build from the parsed CLI namespace (missing attributes take the defaults)."""
        get = lambda name, default=None: getattr(args, name, default)  # noqa: E731
        env_file = get("env_file", ".env")
        env_var = get("api_key_env", "OPENAI_API_KEY") or "OPENAI_API_KEY"
        api_key = load_api_key(env_var, env_file)
        api_base = get("api_base") or env_value(
            "OPENAI_BASE_URL", env_file=env_file, default=DEFAULT_API_BASE
        )
        extra = get("api_extra_body")
        extra_body: Dict[str, Any] = {}
        if extra:
            try:
                extra_body = json.loads(extra)
            except ValueError as exc:
                raise ValueError(f"--api-extra-body: not valid JSON ({exc})") from None
            if not isinstance(extra_body, dict):
                raise ValueError("--api-extra-body: expected a JSON object")
        system_prompt = SYSTEM_PROMPT
        spf = get("system_prompt_file")
        if spf:
            try:
                system_prompt = Path(spf).read_text(encoding="utf-8")
            except OSError as exc:
                raise ValueError(
                    f"--system-prompt-file {spf}: cannot read ({exc.strerror})"
                ) from None
        default_action = get("default_action", 2)
        if isinstance(default_action, str):
            default_action = _action_choice(default_action)
        agent = cls(
            model=get("model"),
            api_base=api_base,
            api_key=api_key,
            temperature=get("temperature", 0.0),
            max_tokens=get("max_tokens", 256),
            image_size=get("image_size", 512),
            image_format=get("image_format", "png"),
            history_length=get("history_length", 8),
            send_depth=get("send_depth", False),
            max_depth=get("depth_max", 10.0),
            timeout=get("api_timeout", 60.0),
            retries=get("api_retries", 3),
            backoff=get("api_backoff", 1.0),
            on_unparseable=get("on_unparseable", "retry"),
            unparseable_retries=get("unparseable_retries", 2),
            default_action=default_action,
            tolerant=not get("strict_reply", False),
            extra_body=extra_body,
            system_prompt=system_prompt,
            log_images=get("log_prompt_images", False),
        )
        if api_key is None and not agent.client.is_loopback:
            print(
                safe_line(
                    f"mosnav-eval: warning: no API key in ${env_var} or {env_file or '.env'}; "
                    f"sending requests to {agent.client.url} without one"
                ),
                file=sys.stderr,
            )
        return agent

    def set_log_path(self, path: Union[str, Path, None]) -> None:
        """Append one JSON line per step (prompt, image references, reply, action) to ``path``.

        ``mosnav-eval --log-prompts`` calls this with ``<output-dir>/rank_XXXXX/prompts.jsonl``
        before the first episode. Nothing is created until the first step, so an output
        directory stays empty until the run has started."""
        self.log_path = Path(path) if path else None

    # ------------------------------------------------------------------ agent API
    def reset(self) -> None:
        """Start a new episode: clear the action history and the per-episode counters."""
        self._history.clear()
        for key, value in self._stats.items():
            self._total[key] += value
        self._stats = _stats_zero()
        self._episode_index += 1
        self._step = 0

    def episode_stats(self) -> Dict[str, Any]:
        """Counters of the current episode, for the record's ``extras``."""
        out = dict(self._stats)
        out["api_latency_s"] = round(out["api_latency_s"], 3)
        return out

    def total_stats(self) -> Dict[str, Any]:
        """Counters summed over every episode of this agent."""
        out = dict(self._total)
        for k, v in self._stats.items():
            out[k] += v
        out["api_latency_s"] = round(out["api_latency_s"], 3)
        return out

    def act(
        self,
        observation: Any = None,
        *,
        rgb: Any = None,
        depth: Any = None,
        prompt: Optional[str] = None,
    ) -> int:
        """One step: ask the model, return an action id (SPEC §2).

        Raises :class:`APIUnavailableError` / :class:`APIRequestError` when the server fails
        (the rollout turns that into an ``error`` record) and :class:`UnparseableReplyError`
        under ``--on-unparseable error``. Also accepts the legacy ``act(rgb=, depth=, prompt=)``.
        """
        if self._episode_index < 0:
            self.reset()
        obs = observation
        if obs is None:
            obs = SimpleNamespace(
                rgb=rgb,
                depth=depth,
                task_prompt=prompt,
                goal_text=None,
                step_count=self._step,
                max_steps=None,
                target_mode=None,
                episode_id=None,
                scene_id=None,
                extras=None,
            )
        count = getattr(obs, "step_count", None)
        step = (
            int(count) if isinstance(count, numbers.Integral) and count >= 0 else self._step
        ) + 1
        if getattr(obs, "rgb", None) is None:
            raise ValueError(
                "APIAgent: observation.rgb is missing; the API agent needs the RGB view"
            )
        goal = getattr(obs, "goal_image", None)
        images: List[EncodedImage] = [] if goal is None else [self._encoded_goal(goal)]
        images.append(
            encode_image(rgb_to_image(obs.rgb), "rgb", self.image_size, self.image_format)
        )
        if self.send_depth and getattr(obs, "depth", None) is not None:
            extras = getattr(obs, "extras", None) or {}
            units = extras.get("depth_units") if isinstance(extras, dict) else None
            normalized = {"metres": False, "meters": False, "normalized": True}.get(units)
            images.append(
                encode_image(
                    depth_to_image(obs.depth, self.max_depth, normalized),
                    "depth",
                    self.image_size,
                    "png",
                )
            )
        history = list(self._history)[-self.history_length :] if self.history_length else None
        depth_sent = images[-1].role == "depth"
        text = user_text(obs, history, depth_sent, self.max_depth, goal is not None)
        messages = build_messages(self.system_prompt, text, images, labelled=goal is not None)

        attempts: List[Dict[str, Any]] = []
        action: Optional[int] = None
        defaulted = False
        error: Optional[BaseException] = None
        try:
            while True:
                payload = {
                    "model": self.model,
                    "messages": messages,
                    "temperature": self.temperature,
                    "max_tokens": self.max_tokens,
                    **self.extra_body,
                }
                try:
                    result = self.client.complete(payload)
                except APIError as exc:
                    n = getattr(exc, "attempts", 1)
                    self._stats["api_calls"] += n
                    self._stats["api_retries"] += max(0, n - 1)
                    raise
                self._stats["api_calls"] += result.attempts
                self._stats["api_retries"] += result.attempts - 1
                self._stats["api_latency_s"] += result.latency_s
                for key in ("prompt_tokens", "completion_tokens"):
                    value = result.usage.get(key)
                    if isinstance(value, (int, float)):
                        self._stats[key] += int(value)
                parsed = parse_action(result.text, tolerant=self.tolerant)
                attempts.append(
                    {
                        "reply": result.text,
                        "parsed_action": parsed.action,
                        "parse": parsed.method,
                        "reason": parsed.reason or None,
                        "finish_reason": result.finish_reason,
                        "http_attempts": result.attempts,
                        "latency_s": round(result.latency_s, 3),
                    }
                )
                if parsed.action is not None:
                    if parsed.method in ("name", "digit"):
                        self._stats["tolerant_parses"] += 1
                    action = parsed.action
                    break
                self._stats["unparseable_replies"] += 1
                reason = parsed.reason + (
                    " (cut at --max-tokens)" if result.finish_reason == "length" else ""
                )
                if self.on_unparseable == "error":
                    raise UnparseableReplyError(
                        f"model reply names no valid action at step {step}: {reason}"
                    )
                if self.on_unparseable == "retry" and len(attempts) <= self.unparseable_retries:
                    self._stats["reasks"] += 1
                    messages = messages + [
                        {"role": "assistant", "content": result.text or ""},
                        {"role": "user", "content": REPAIR_PROMPT.format(reason=reason)},
                    ]
                    continue
                action, defaulted = self.default_action, True
                self._stats["defaulted_actions"] += 1
                break
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._write_log(obs, step, messages, images, attempts, action, defaulted, error)
        self._step = step
        self._history.append((step, action, "default, reply unparseable" if defaulted else ""))
        return int(action)

    def close(self) -> None:
        """Nothing to release (one connection per request); present for symmetry."""

    # ------------------------------------------------------------------ logging
    def _encoded_goal(self, goal: Any) -> EncodedImage:
        """``obs.goal_image`` encoded as the frames are; encoded again only when its pixels
        change (it is fixed for an episode)."""
        arr = np.ascontiguousarray(np.asarray(goal))
        key = (arr.shape, str(arr.dtype), hashlib.sha256(arr.tobytes()).hexdigest())
        if self._goal_cache is None or self._goal_cache[0] != key:
            img = rgb_to_image(arr, "observation.goal_image")
            self._goal_cache = (key, encode_image(img, "goal", self.image_size, self.image_format))
        return self._goal_cache[1]

    def _write_log(
        self,
        obs: Any,
        step: int,
        messages: List[Dict[str, Any]],
        images: List[EncodedImage],
        attempts: List[Dict[str, Any]],
        action: Optional[int],
        defaulted: bool,
        error: Optional[BaseException],
    ) -> None:
        if self.log_path is None:
            return
        refs = [im.reference() for im in images]
        if self.log_images:
            folder = self.log_path.parent / f"{self.log_path.stem}_images"
            ep = re.sub(
                r"[^A-Za-z0-9_.-]+",
                "_",
                f"{getattr(obs, 'scene_id', None)}__{getattr(obs, 'episode_id', None)}",
            )
            sub = folder / f"{self._episode_index:05d}_{ep}"
            make_dirs(str(folder))
            make_dirs(str(sub))
            for im, ref in zip(images, refs):
                # the goal image is the same at every step: saved once per episode
                name = f"goal.{im.format}" if im.role == "goal" else f"step_{step:04d}_{im.role}"
                target = sub / (name if im.role == "goal" else f"{name}.{im.format}")
                if not os.path.lexists(target):
                    with open_file(str(target), "wb") as fh:
                        fh.write(
                            im.png_bytes if im.format == "png" else _decode_data_url(im.data_url)
                        )
                ref["path"] = os.path.relpath(target, self.log_path.parent)
        extras = getattr(obs, "extras", None) or {}
        line = {
            "time": round(time.time(), 3),
            "episode_key": extras.get("episode_key") if isinstance(extras, dict) else None,
            "scene_id": getattr(obs, "scene_id", None),
            "episode_id": getattr(obs, "episode_id", None),
            "step": step,
            "model": self.model,
            "messages": loggable_messages(messages, images),
            "images": refs,
            "attempts": attempts,
            "reply": attempts[-1]["reply"] if attempts else None,
            "parsed_action": attempts[-1]["parsed_action"] if attempts else None,
            "action": action,
            "defaulted": defaulted,
            "error": None
            if error is None
            else {"type": type(error).__name__, "message": str(error)},
        }
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        line = _capped(line, mask=self.client.secrets)
        text = mask_secrets(json.dumps(line, ensure_ascii=False), *self.client.secrets)
        with open_file(str(self.log_path), "a") as fh:  # never through a planted link
            fh.write(text + "\n")


def _capped(value: Any, limit: int = LOG_FIELD_LIMIT, mask: Tuple[str, ...] = ()) -> Any:
    """``value`` with every string longer than ``limit`` UTF-8 bytes cut to its first
    ``limit`` bytes (on a character boundary) plus ``...[N bytes left out]``. A cut text is
    masked first, so a cut never leaves the start of a key behind."""
    if isinstance(value, str):
        if len(value) * 4 <= limit:
            return value
        data = value.encode("utf-8", "surrogatepass")
        if len(data) <= limit:
            return value
        value = mask_secrets(value, *mask)
        data = value.encode("utf-8", "surrogatepass")
        if len(data) <= limit:
            return value
        kept = data[:limit].decode("utf-8", "ignore")
        return f"{kept}...[{len(data) - len(kept.encode('utf-8', 'surrogatepass'))} bytes left out]"
    if isinstance(value, dict):
        return {k: _capped(v, limit, mask) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_capped(v, limit, mask) for v in value]
    return value


def _decode_data_url(url: str) -> bytes:
    import base64

    return base64.b64decode(url.split(",", 1)[1])
