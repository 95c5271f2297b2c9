"""Build the chat messages the API agent sends: text, RGB (and depth) as data URLs, history.

Kept apart from the HTTP client so the prompt can be inspected and tested without a server.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from PIL import Image, ImageOps

from habitat_mosnav.agents.vlm.parsing import ACTION_NAMES
from habitat_mosnav.chat import data_url

__all__ = [
    "EncodedImage",
    "SYSTEM_PROMPT",
    "GOAT_ACTIONS",
    "encode_image",
    "rgb_to_image",
    "depth_to_image",
    "fallback_task_text",
    "format_history",
    "REPAIR_PROMPT",
]

SYSTEM_PROMPT = (
    "You are an embodied navigation agent in an indoor 3D scene. Each user message gives "
    "the task, the numbered actions you may use, your recent actions and the current "
    "first-person camera image. Choose exactly one action per turn. You may think briefly, "
    "but your reply must end with one line of the form\n"
    "ACTION: <number>\n"
    "where <number> is one of the action numbers listed in the task."
)

REPAIR_PROMPT = (
    "Your previous reply could not be read as an action ({reason}). Reply again, ending with "
    "one line of the form ACTION: <number>, using one of the action numbers listed in the task."
)

#: The goat action table (SPEC §2), for prompts built without a task prompt.
GOAT_ACTIONS = (
    "Actions (answer with the number):\n"
    "  0 = FINISH: the whole task is done; ends the episode\n"
    "  1 = MOVE_FORWARD: move 0.25 m forward\n"
    "  2 = TURN_LEFT: turn left by 30 degrees\n"
    "  3 = TURN_RIGHT: turn right by 30 degrees\n"
    "  4 = LOOK_UP: tilt the camera up by 30 degrees\n"
    "  5 = LOOK_DOWN: tilt the camera down by 30 degrees\n"
    "  6 = TARGET_FOUND: a matching object is near you"
)

DEPTH_NOTE = (
    "The {ordinal} image is the depth view, colour-coded: yellow = near, green = middle "
    "distance, dark purple = far (about {max_depth:g} m or more), black = no reading."
)
GOAL_IMAGE_NOTE = (
    "The first image is the goal image: it shows one object that matches the goal (objects "
    "like it match); it stays the same for the whole episode. The second image is the "
    "current camera view."
)
#: With a goal image every image part follows a text part naming it (docs/EVALUATION.md §6:
#: task text, goal image, current view, depth view).
IMAGE_LABELS = {"goal": "Goal image:", "rgb": "Current camera view:", "depth": "Depth view:"}


@dataclass(frozen=True)
class EncodedImage:
    """An image ready to send (``data_url``) and a reference safe to log (no pixels)."""

    role: str
    data_url: str
    sha256: str
    width: int
    height: int
    format: str
    num_bytes: int
    png_bytes: bytes  # for optional saving beside the prompt log

    def reference(self) -> Dict[str, Any]:
        return {
            "role": self.role,
            "sha256": self.sha256,
            "width": self.width,
            "height": self.height,
            "format": self.format,
            "bytes": self.num_bytes,
        }


def _resize(img: Image.Image, size: int) -> Image.Image:
    """Shrink so the longer side is at most ``size`` pixels (0 keeps the original; never enlarges)."""
    if size <= 0 or max(img.size) <= size:
        return img
    w, h = img.size
    scale = size / float(max(w, h))
    new = (max(1, round(w * scale)), max(1, round(h * scale)))
    return img.resize(new, Image.LANCZOS)


def rgb_to_image(rgb: Any, name: str = "observation.rgb") -> Image.Image:
    """(H, W, 3|4) uint8 (or float in [0, 1]) -> RGB PIL image; ``name`` for the error."""
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise ValueError(f"{name}: expected an (H, W, 3) array, got shape {arr.shape}")
    arr = arr[..., :3]
    if arr.dtype != np.uint8:
        arr = np.asarray(arr, dtype=np.float64)
        if np.nanmax(arr) <= 1.0 + 1e-6:
            arr = arr * 255.0
        arr = np.clip(np.nan_to_num(arr), 0, 255).astype(np.uint8)
    return Image.fromarray(np.ascontiguousarray(arr))


def depth_to_image(
    depth: Any, max_depth: float = 10.0, normalized: Optional[bool] = None
) -> Image.Image:
    """Colour-code a depth map so a VLM can read it: near = yellow, far = purple, 0 = black.

    Metres are clipped at ``max_depth``; ``normalized=True`` means values in [0, 1] already
    (habitat's ``normalize_depth``). When unknown (None), a frame with every value <= 1 is
    taken as normalised.
    """
    arr = np.asarray(depth, dtype=np.float32)
    if arr.ndim == 3:
        arr = arr[..., 0]
    if arr.ndim != 2:
        raise ValueError(f"observation.depth: expected an (H, W[, 1]) array, got shape {arr.shape}")
    valid = np.isfinite(arr) & (arr > 0)
    finite_max = float(arr[valid].max()) if valid.any() else 0.0
    if normalized is None:
        normalized = finite_max <= 1.0
    scale = 1.0 if normalized else float(max_depth)
    nearness = np.where(valid, 1.0 - np.clip(arr / scale, 0.0, 1.0), 0.0)
    gray = Image.fromarray((nearness * 255).astype(np.uint8))
    coloured = ImageOps.colorize(gray, black="#440154", white="#fde725", mid="#21918c")
    out = np.array(coloured)
    out[~valid] = 0
    return Image.fromarray(out)


def encode_image(
    img: Image.Image, role: str, size: int = 0, fmt: str = "png", quality: int = 90
) -> EncodedImage:
    """Resize and encode as a base64 data URL (PNG, or JPEG when ``fmt == "jpeg"``)."""
    img = _resize(img, size)
    buf = io.BytesIO()
    fmt = fmt.lower()
    if fmt in ("jpg", "jpeg"):
        img.save(buf, format="JPEG", quality=quality)
        mime, fmt = "image/jpeg", "jpeg"
    elif fmt == "png":
        img.save(buf, format="PNG")
        mime = "image/png"
    else:
        raise ValueError(f"--image-format: expected png or jpeg, got {fmt!r}")
    data = buf.getvalue()
    url = data_url(data, mime)
    png = data if fmt == "png" else b""
    return EncodedImage(
        role, url, hashlib.sha256(data).hexdigest(), img.size[0], img.size[1], fmt, len(data), png
    )


def format_history(history: Sequence[Tuple[int, int, str]]) -> str:
    """``[(step, action, note), ...]`` -> one line each, oldest first."""
    if not history:
        return "Previous actions: none (this is the first step)."
    lines = [f"Previous actions (last {len(history)}, oldest first):"]
    for step, action, note in history:
        name = ACTION_NAMES.get(int(action), "UNKNOWN")
        lines.append(f"- step {step}: {int(action)} {name}" + (f" ({note})" if note else ""))
    return "\n".join(lines)


def fallback_task_text(obs: Any) -> str:
    """Task text when the observation carries no ``task_prompt`` (a custom rollout, or the
    legacy call without a prompt): the shared prompt of :mod:`habitat_mosnav.prompts` when
    the goal is known, else the bare goat action table."""
    goal = getattr(obs, "goal_text", None)
    mode = getattr(obs, "target_mode", None)
    if goal and mode:
        try:
            from habitat_mosnav.prompts import build_task_prompt

            return build_task_prompt(
                goal,
                getattr(obs, "goal_type", None) or "description",
                mode,
                getattr(obs, "target_count", None),
                getattr(obs, "max_steps", None),
            )
        except (ImportError, ValueError):
            pass
    head = f"Find objects matching: {goal}\n" if goal else "Navigate to the goal.\n"
    return head + GOAT_ACTIONS


def user_text(
    obs: Any,
    history: Optional[Sequence[Tuple[int, int, str]]],
    send_depth: bool,
    max_depth: float,
    goal_image: bool = False,
) -> str:
    """The text part of the user message for one step; ``history=None`` omits the history;
    ``goal_image``: the goal image is sent first, before the current view."""
    task = getattr(obs, "task_prompt", None) or fallback_task_text(obs)
    parts: List[str] = [task.strip()]
    goal = getattr(obs, "goal_text", None)
    if goal and goal not in task:
        parts.append(f"Goal: {goal}")
    step = getattr(obs, "step_count", None)
    max_steps = getattr(obs, "max_steps", None)
    if step is not None:
        parts.append(
            f"Actions taken so far: {int(step)}"
            + (f" (at most {max_steps})." if max_steps else ".")
        )
    if history is not None:
        parts.append(format_history(history))
    if goal_image:
        parts.append(
            GOAL_IMAGE_NOTE
            + (
                " " + DEPTH_NOTE.format(ordinal="third", max_depth=max_depth)
                if send_depth
                else " No depth image is sent."
            )
        )
    elif send_depth:
        parts.append(
            "The first image is the current camera view. "
            + DEPTH_NOTE.format(ordinal="second", max_depth=max_depth)
        )
    else:
        parts.append("The image is the current camera view (no depth image is sent).")
    parts.append("Reply with your reasoning (optional) and end with one line: ACTION: <number>")
    return "\n\n".join(parts)


def build_messages(
    system_prompt: Optional[str], text: str, images: Sequence[EncodedImage], labelled: bool = False
) -> List[Dict[str, Any]]:
    """System + user (text part, then one ``image_url`` part per image, in order; with
    ``labelled`` each image follows a text part naming it, :data:`IMAGE_LABELS`)."""
    content: List[Dict[str, Any]] = [{"type": "text", "text": text}]
    for im in images:
        if labelled:
            content.append({"type": "text", "text": IMAGE_LABELS[im.role]})
        content.append({"type": "image_url", "image_url": {"url": im.data_url}})
    messages: List[Dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": content})
    return messages


def loggable_messages(
    messages: Sequence[Dict[str, Any]], images: Sequence[EncodedImage]
) -> List[Dict[str, Any]]:
    """The same messages with every image replaced by its reference (no base64)."""
    by_url = {im.data_url: im for im in images}
    out: List[Dict[str, Any]] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for p in content:
                if p.get("type") == "image_url":
                    url = p.get("image_url", {}).get("url", "")
                    im = by_url.get(url)
                    parts.append(
                        {"type": "image_ref", **(im.reference() if im else {"role": "unknown"})}
                    )
                else:
                    parts.append(dict(p))
            out.append({"role": m["role"], "content": parts})
        else:
            out.append(dict(m))
    return out
