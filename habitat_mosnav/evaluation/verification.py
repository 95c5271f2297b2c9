"""Reading a ``mosnav-replay --verify`` mark (summary.json's ``verification``): one rule for
every reader (``mosnav-report``'s page and tables), so a mark is believed the same way
everywhere. Standard library only."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

__all__ = ["VERIFICATION_FIELD", "effective_mark", "settings_text"]

#: summary.json's field holding the --verify outcome.
VERIFICATION_FIELD = "verification"


def effective_mark(
    mark: Any, records_sha256: str, incomplete: bool
) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """(the mark as it is to be shown, a note or None). A mark is believed only when it
    names the digest of the records it was made from and they are still those records:
    without ``records_sha256`` it is shown as not verified; with another digest, stale; a
    "verified" mark on records that are not all there (a partial last line, a rank
    unfinished) is shown as not verified."""
    if not isinstance(mark, Mapping) or "status" not in mark:
        return None, None
    mark = dict(mark)
    digest = mark.get("records_sha256")
    if not isinstance(digest, str) or not digest:
        if mark.get("status") == "verified":
            mark["status"] = "not_verified"
        return mark, "the --verify mark names no records_sha256: not verified"
    if digest != records_sha256:
        mark["status"] = "stale"
        return mark, "the records changed after mosnav-replay --verify: its mark is stale"
    if incomplete and mark.get("status") == "verified":
        mark["status"] = "not_verified"
        return (
            mark,
            "the records are incomplete (a partial last line or a rank unfinished): not verified",
        )
    return mark, None


def settings_text(mark: Mapping[str, Any]) -> str:
    """``success distance 1 m, sliding on, step 0.25 m, turn 30°`` (the settings a run
    was checked under), or "" for a mark without them."""
    s = mark.get("settings")
    if not isinstance(s, Mapping) or not s:
        return ""

    def num(v) -> str:
        return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)

    parts = [
        f"success distance {num(s.get('success_distance'))} m",
        f"sliding {'on' if s.get('allow_sliding') else 'off'}",
        f"step {num(s.get('forward_step_size'))} m",
        f"turn {num(s.get('turn_angle'))}°",
    ]
    if s.get("benchmark"):
        parts.insert(0, f"setting {s['benchmark']}")
    return ", ".join(parts)
