"""Stage ``attributes``: colour / material / features (and a caption) per goal.

Online: crops of the goal rendered from its best view points go to a VLM through the
OpenAI-compatible chat API (:mod:`.llm`); each goal's result (or its failed attempts, with
the raw replies) is cached in ``<work>/<scene>/attributes/<object_id>.json``, so an
interrupted run resumes where it stopped and a goal that failed is retried next time.
Offline (``--offline``): attributes come from the scene's ``<id>.mosnav_meta.json``
(generated scenes have it), so the pipeline runs without network.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from habitat_mosnav.safety import MAX_JSON_BYTES, InputFileError, read_input_text
from habitat_mosnav.dataset_building.common import (
    ATTRIBUTE_FIELDS,
    BuildError,
    SceneFiles,
    log,
    read_json,
    write_json,
)


# ----------------------------------------------------------------------------- offline
def read_meta_attributes(scene: SceneFiles) -> Dict[int, Dict[str, Any]]:
    """object_id -> {color, material, feature[, caption]} from ``<id>.mosnav_meta.json``."""
    if scene.meta is None:
        raise BuildError(
            f"{scene.directory}: --offline needs {scene.scene_id}.mosnav_meta.json "
            "(only generated scenes have it; run without --offline to ask a VLM)"
        )
    doc = read_json(scene.meta)
    objs = doc.get("objects") if isinstance(doc, dict) else doc
    if not isinstance(objs, list):
        raise BuildError(f"{scene.meta}: expected a list of objects (or an 'objects' list)")
    out: Dict[int, Dict[str, Any]] = {}
    for i, o in enumerate(objs):
        if (
            not isinstance(o, dict)
            or isinstance(o.get("object_id"), bool)
            or not isinstance(o.get("object_id"), int)
        ):
            raise BuildError(f"{scene.meta}: object #{i}: field 'object_id' must be an integer")
        rec: Dict[str, Any] = {}
        for k in ATTRIBUTE_FIELDS:
            v = o.get(k, o.get(k + "s", []))
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise BuildError(
                    f"{scene.meta}: object {o['object_id']}: field '{k}' must be a list of strings"
                )
            rec[k] = list(v)
        if isinstance(o.get("caption"), str):
            rec["caption"] = o["caption"]
        out[int(o["object_id"])] = rec
    return out


def offline_attributes(
    goals: List[Dict[str, Any]], scene: SceneFiles, counts: Counter
) -> List[Dict[str, Any]]:
    meta = read_meta_attributes(scene)
    out = []
    for g in goals:
        g = dict(g)
        m = meta.get(int(g["object_id"]))
        if m is None:
            counts["no_metadata"] += 1
            g["attributes"] = {k: [] for k in ATTRIBUTE_FIELDS}
        else:
            g["attributes"] = {k: list(m[k]) for k in ATTRIBUTE_FIELDS}
            if m.get("caption"):
                g["caption"] = m["caption"]
            counts["from_metadata"] += 1
        out.append(g)
    return out


# ----------------------------------------------------------------------------- online
def crop_object(
    rgb: np.ndarray, mask: np.ndarray, pad: float = 0.3, min_side: int = 48
) -> Optional[np.ndarray]:
    """The part of the image around the object's pixels, padded; None if it is not seen."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        return None
    h, w = mask.shape
    x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
    side = max(x1 - x0, y1 - y0)
    half = max(int(side * (1 + 2 * pad)) // 2, min_side // 2)
    cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
    xa, xb = max(0, cx - half), min(w, cx + half)
    ya, yb = max(0, cy - half), min(h, cy + half)
    return np.ascontiguousarray(rgb[ya:yb, xa:xb, :3])


def render_crops(geo, goal: Dict[str, Any], n_views: int = 2) -> List[np.ndarray]:
    crops = []
    for vp in goal.get("view_points", [])[:n_views]:
        rgb, sem = geo.rgb_semantic(vp["position"], vp["rotation"])
        c = crop_object(rgb, sem == goal["object_id"])
        if c is not None:
            crops.append(c)
    return crops


def cache_path(work: Path, scene_id: str, object_id: int) -> Path:
    return Path(work) / scene_id / "attributes" / f"{object_id}.json"


def online_attributes(
    goals: List[Dict[str, Any]],
    scene_id: str,
    work: Path,
    client,
    geo_factory,
    n_views: int,
    counts: Counter,
    overwrite: bool = False,
    progress=None,
) -> List[Dict[str, Any]]:
    """Ask the VLM for every goal without a successful cached answer.

    ``geo_factory()`` opens the scene only when some goal needs rendering. A goal whose
    request fails (after retries) is cached as failed with its attempts and kept with empty
    attributes; the stage goes on and the next run retries it.
    """
    from habitat_mosnav.dataset_building.llm import (
        APIError,
        attribute_messages,
        parse_attribute_reply,
    )

    geo = None
    out = []
    try:
        for g in goals:
            g = dict(g)
            path = cache_path(work, scene_id, g["object_id"])
            cached = None
            if path.exists() and not overwrite:
                try:
                    cached = json.loads(read_input_text(str(path), MAX_JSON_BYTES))
                except (json.JSONDecodeError, InputFileError, OSError):
                    cached = None  # an unreadable cache entry is asked again
            if not (cached and cached.get("status") == "ok"):
                if geo is None:
                    geo = geo_factory()
                crops = render_crops(geo, g, n_views)
                attempts: List[Dict[str, Any]] = []
                if not crops:
                    cached = {
                        "status": "failed",
                        "error": "object not visible in any rendered view",
                        "attempts": [],
                    }
                else:
                    try:
                        result = client.chat(
                            attribute_messages(g["category"], crops),
                            client.s.vlm_model,
                            parse=parse_attribute_reply,
                        )
                        parsed, attempts = result.value, result.attempt_log
                        cached = {
                            "status": "ok",
                            "attributes": {k: parsed[k] for k in ATTRIBUTE_FIELDS},
                            "caption": parsed.get("caption", ""),
                            "model": client.s.vlm_model,
                            "attempts": attempts,
                        }
                    except APIError as e:
                        attempts = e.attempt_log
                        cached = {
                            "status": "failed",
                            "error": str(e),
                            "model": client.s.vlm_model,
                            "attempts": attempts,
                        }
                cached["object_id"] = g["object_id"]
                cached["category"] = g["category"]
                write_json(path, cached)
                counts["requested"] += 1
                counts["malformed_replies"] += sum(
                    1 for a in attempts if a.get("error") == "malformed"
                )
            else:
                counts["cached"] += 1
            if cached.get("status") == "ok":
                g["attributes"] = {
                    k: list(cached["attributes"].get(k, [])) for k in ATTRIBUTE_FIELDS
                }
                g["caption"] = cached.get("caption") or ""
                counts["ok"] += 1
            else:
                g["attributes"] = {k: [] for k in ATTRIBUTE_FIELDS}
                counts["failed"] += 1
                log.warning(
                    "attributes: %s object %s: %s", scene_id, g["object_id"], cached.get("error")
                )
            out.append(g)
            if progress is not None:
                progress.update(1)
    finally:
        if geo is not None:
            geo.close()
    return out
