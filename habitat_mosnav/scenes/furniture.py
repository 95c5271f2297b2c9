"""Furniture builders: recognisable objects from a few boxes, cylinders and spheres.

Each ``build_<category>(rng, room, style=None)`` returns an :class:`Item`: parts in the
object's local frame (footprint centred at x = z = 0, standing on y = 0, back towards
-Z and front towards +Z) and its attributes (colour, material, feature). Passing a
``style`` from another item rebuilds an identical copy (sets: dining chairs,
nightstands), which is what makes description queries match several instances.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

from habitat_mosnav.scenes.geometry import COLOR_RGB, Part, box, cylinder, sphere


@dataclass
class Item:
    category: str
    parts: List[Part]
    color: List[str]
    material: List[str]
    feature: List[str]
    style: dict = field(default_factory=dict)
    # "floor": stands on the floor; "wall": hangs on a wall at style["mount_y"]
    mount: str = "floor"


def _pick(rng, options, weights=None):
    if weights is None:
        return options[int(rng.integers(len(options)))]
    w = np.asarray(weights, dtype=np.float64)
    return options[int(rng.choice(len(options), p=w / w.sum()))]


def _u(rng, lo, hi, nd=2):
    return float(np.round(rng.uniform(lo, hi), nd))


def rgb(name: str, tone: float = 1.0):
    return tuple(min(1.0, c * tone) for c in COLOR_RGB[name])


def _tone(rng):
    return float(np.round(rng.uniform(0.9, 1.08), 3))


_DARK_METAL = (0.22, 0.22, 0.24)
_STEEL = (0.70, 0.71, 0.73)


def _legs(w, d, h, t, inset, col, mat, round_legs=False):
    parts = []
    for sx in (-1, 1):
        for sz in (-1, 1):
            x = sx * (w / 2 - inset - t / 2)
            z = sz * (d / 2 - inset - t / 2)
            if round_legs:
                parts.append(cylinder((x, 0.0, z), t / 2, h, col, mat, segments=6, caps=False))
            else:
                parts.append(box((x, h / 2, z), (t, h, t), col, mat))
    return parts


# ----------------------------------------------------------------------------- chair
def build_chair(rng, room, style=None) -> Item:
    if style is None:
        if room == "living room" and rng.random() < 0.8:
            mat = _pick(rng, ["fabric", "leather"], [3, 1])
        else:
            mat = _pick(rng, ["wood", "metal", "plastic", "fabric"], [5, 2, 2, 2])
        colors = {
            "wood": (["brown", "black", "white"], [6, 2, 2]),
            "metal": (["black", "gray", "white"], [3, 2, 1]),
            "plastic": (["white", "red", "blue", "green", "yellow", "black"], None),
            "fabric": (["gray", "blue", "beige", "green", "red"], None),
            "leather": (["brown", "black"], [2, 1]),
        }[mat]
        color = _pick(rng, *colors)
        arm = rng.random() < (0.9 if room == "living room" else 0.25)
        style = dict(
            color=color,
            mat=mat,
            tone=_tone(rng),
            arm=bool(arm),
            high=bool(rng.random() < 0.2),
            w=_u(rng, 0.44, 0.5) + (0.2 if arm and mat in ("fabric", "leather") else 0.0),
            d=_u(rng, 0.46, 0.52) + (0.1 if arm and mat in ("fabric", "leather") else 0.0),
        )
    s = style
    col = rgb(s["color"], s["tone"])
    mat = s["mat"]
    w, d = s["w"], s["d"]
    seat_h, seat_t = 0.45, 0.06
    back_h = 0.62 if s["high"] else 0.42
    soft = mat in ("fabric", "leather")
    leg_col = (0.3, 0.2, 0.12) if soft else col
    leg_mat = "wood" if soft else mat
    parts = _legs(
        w,
        d,
        seat_h - seat_t,
        0.045 if not soft else 0.05,
        0.02,
        leg_col,
        leg_mat,
        round_legs=(mat == "metal"),
    )
    seat_t2 = 0.12 if soft else seat_t
    y0 = seat_h - seat_t
    parts.append(box((0, y0 + seat_t2 / 2, 0), (w, seat_t2, d), col, mat))
    bt = 0.14 if soft else 0.05
    parts.append(box((0, y0 + seat_t2 + back_h / 2, -d / 2 + bt / 2), (w, back_h, bt), col, mat))
    feats = []
    if s["arm"]:
        aw = 0.12 if soft else 0.05
        ah = 0.22
        for sx in (-1, 1):
            parts.append(
                box((sx * (w / 2 - aw / 2), y0 + seat_t2 + ah / 2, 0.0), (aw, ah, d), col, mat)
            )
        feats.append("armrest")
    if soft:
        feats.append("cushioned")
    if s["high"]:
        feats.append("high back")
    return Item("chair", parts, [s["color"]], [mat], feats, s)


# ----------------------------------------------------------------------------- tables
def build_table(rng, room, style=None, kind: Optional[str] = None) -> Item:
    if style is None:
        kind = kind or ("coffee" if room == "living room" else "dining")
        mat = _pick(rng, ["wood", "glass", "marble", "metal"], [6, 2, 1, 1])
        color = {
            "wood": _pick(rng, ["brown", "white", "black"], [6, 2, 2]),
            "glass": _pick(rng, ["black", "gray"]),
            "marble": _pick(rng, ["white", "gray", "black"], [3, 1, 1]),
            "metal": _pick(rng, ["black", "gray", "white"]),
        }[mat]
        rnd = bool(rng.random() < 0.35)
        if kind == "coffee":
            w, d = (_u(rng, 0.6, 0.8),) * 2 if rnd else (_u(rng, 0.9, 1.2), _u(rng, 0.5, 0.65))
            h = _u(rng, 0.38, 0.46)
        elif kind == "side":
            rnd = bool(rng.random() < 0.6)
            w = d = _u(rng, 0.42, 0.55)
            h = _u(rng, 0.5, 0.6)
        else:
            w, d = (_u(rng, 0.9, 1.1),) * 2 if rnd else (_u(rng, 1.2, 1.6), _u(rng, 0.8, 0.9))
            h = 0.76
        style = dict(kind=kind, mat=mat, color=color, tone=_tone(rng), round=rnd, w=w, d=d, h=h)
    s = style
    col = rgb(s["color"], s["tone"])
    w, d, h = s["w"], s["d"], s["h"]
    top_t = 0.04
    top_mat = s["mat"]
    top_col = col if s["mat"] != "glass" else (0.75, 0.85, 0.9)
    frame_col = col
    frame_mat = "metal" if s["mat"] in ("glass", "marble") else s["mat"]
    parts = []
    feats = []
    if s["round"]:
        parts.append(cylinder((0, h - top_t, 0), w / 2, top_t, top_col, top_mat, segments=16))
        parts.append(
            cylinder(
                (0, 0.02, 0), 0.05, h - top_t - 0.02, frame_col, frame_mat, segments=8, caps=False
            )
        )
        parts.append(cylinder((0, 0, 0), min(0.25, w / 3), 0.02, frame_col, frame_mat, segments=12))
        feats.append("round")
    else:
        parts.append(box((0, h - top_t / 2, 0), (w, top_t, d), top_col, top_mat))
        parts += _legs(w, d, h - top_t, 0.05, 0.04, frame_col, frame_mat)
        feats.append("rectangular")
    if s["mat"] == "glass":
        feats.append("glass top")
    if s["kind"] == "coffee":
        feats.append("low")
    elif s["kind"] == "side":
        feats.append("small")
    return Item("table", parts, [s["color"]], [s["mat"]], feats, s)


def build_desk(rng, room, style=None) -> Item:
    if style is None:
        mat = _pick(rng, ["wood", "metal"], [4, 1])
        color = _pick(rng, ["brown", "white", "black", "gray"], [4, 3, 2, 1])
        style = dict(
            mat=mat,
            color=color,
            tone=_tone(rng),
            w=_u(rng, 1.0, 1.4),
            d=_u(rng, 0.55, 0.65),
            drawers=bool(rng.random() < 0.6),
        )
    s = style
    col = rgb(s["color"], s["tone"])
    w, d, h = s["w"], s["d"], 0.75
    parts = [box((0, h - 0.02, 0), (w, 0.04, d), col, s["mat"])]
    feats = []
    if s["drawers"]:
        dw = 0.4
        parts.append(
            box((w / 2 - dw / 2 - 0.02, (h - 0.04) / 2, 0), (dw, h - 0.04, d - 0.04), col, s["mat"])
        )
        for k in range(3):
            y = 0.12 + k * 0.22
            parts.append(
                box(
                    (w / 2 - dw / 2 - 0.02, y + 0.08, d / 2 - 0.01),
                    (dw - 0.04, 0.18, 0.02),
                    tuple(c * 0.85 for c in col),
                    s["mat"],
                )
            )
        parts.append(
            box((-w / 2 + 0.03, (h - 0.04) / 2, 0), (0.04, h - 0.04, d - 0.04), col, s["mat"])
        )
        feats.append("drawers")
    else:
        for sx in (-1, 1):
            parts.append(
                box(
                    (sx * (w / 2 - 0.03), (h - 0.04) / 2, 0),
                    (0.04, h - 0.04, d - 0.04),
                    col,
                    s["mat"],
                )
            )
    return Item("desk", parts, [s["color"]], [s["mat"]], feats, s)


# ----------------------------------------------------------------------------- sofa
def build_sofa(rng, room, style=None) -> Item:
    if style is None:
        mat = _pick(rng, ["fabric", "leather"], [3, 1])
        color = _pick(
            rng,
            ["gray", "blue", "beige", "green", "red"]
            if mat == "fabric"
            else ["brown", "black", "white"],
        )
        seats = int(_pick(rng, [2, 3], [1, 2]))
        style = dict(
            mat=mat,
            color=color,
            tone=_tone(rng),
            seats=seats,
            w=_u(rng, 0.62, 0.7) * seats + 0.4,
            d=_u(rng, 0.85, 0.95),
            pillows=bool(rng.random() < 0.5),
            pillow_color=_pick(rng, ["white", "yellow", "orange", "red", "beige", "blue"]),
        )
    s = style
    col = rgb(s["color"], s["tone"])
    mat = s["mat"]
    w, d = s["w"], s["d"]
    arm_w, back_t, base_h = 0.2, 0.2, 0.42
    parts = [
        box((0, 0.05 + (base_h - 0.05) / 2, 0.0), (w, base_h - 0.05, d), col, mat),
        box((0, 0.05 + 0.78 / 2, -d / 2 + back_t / 2), (w, 0.78, back_t), col, mat),
    ]
    for sx in (-1, 1):
        parts.append(box((sx * (w / 2 - arm_w / 2), 0.05 + 0.6 / 2, 0), (arm_w, 0.6, d), col, mat))
    inner = w - 2 * arm_w
    cw = inner / s["seats"]
    for k in range(s["seats"]):
        x = -inner / 2 + cw * (k + 0.5)
        parts.append(
            box(
                (x, base_h + 0.06, back_t / 2),
                (cw - 0.02, 0.12, d - back_t - 0.02),
                tuple(c * 1.04 for c in col),
                mat,
            )
        )
    parts += _legs(w, d, 0.05, 0.05, 0.03, (0.2, 0.14, 0.1), "wood")
    feats = ["armrest", f"{'three' if s['seats'] == 3 else 'two'}-seat"]
    colors = [s["color"]]
    if s["pillows"]:
        pc = rgb(s["pillow_color"])
        for sx in (-1, 1):
            parts.append(
                box(
                    (sx * (inner / 2 - 0.2), base_h + 0.3, -d / 2 + back_t + 0.08),
                    (0.38, 0.36, 0.12),
                    pc,
                    "fabric",
                )
            )
        feats.append("pillows")
    return Item("sofa", parts, colors, [mat], feats, s)


# ----------------------------------------------------------------------------- bed
def build_bed(rng, room, style=None) -> Item:
    if style is None:
        double = bool(rng.random() < 0.7)
        frame_mat = _pick(rng, ["wood", "fabric"], [3, 1])
        frame_color = (
            _pick(rng, ["brown", "white", "black"], [3, 2, 1])
            if frame_mat == "wood"
            else _pick(rng, ["gray", "beige", "blue"])
        )
        style = dict(
            double=double,
            frame_mat=frame_mat,
            frame_color=frame_color,
            color=_pick(
                rng,
                ["white", "blue", "gray", "beige", "green", "red", "pink", "yellow"],
                [4, 3, 3, 2, 1, 1, 1, 1],
            ),
            tone=_tone(rng),
            w=_u(rng, 1.4, 1.8) if double else _u(rng, 0.9, 1.05),
            l=_u(rng, 2.0, 2.15),
            tall_head=bool(rng.random() < 0.6),
        )
    s = style
    w, l = s["w"], s["l"]
    fcol = rgb(s["frame_color"], s["tone"])
    bcol = rgb(s["color"], s["tone"])
    head_h = 1.1 if s["tall_head"] else 0.8
    parts = [
        box((0, 0.15, 0.03), (w, 0.3, l - 0.06), fcol, s["frame_mat"]),
        box((0, head_h / 2, -l / 2 + 0.04), (w + 0.04, head_h, 0.08), fcol, s["frame_mat"]),
        box((0, 0.4, 0.04), (w - 0.06, 0.2, l - 0.12), (0.93, 0.93, 0.9), "fabric"),
        box((0, 0.52, 0.3), (w - 0.02, 0.06, l - 0.55), bcol, "fabric"),
    ]
    n_pil = 2 if s["double"] else 1
    pw = (w - 0.2) / n_pil
    for k in range(n_pil):
        x = -w / 2 + 0.1 + pw * (k + 0.5)
        parts.append(
            box((x, 0.56, -l / 2 + 0.3), (pw - 0.08, 0.12, 0.36), (0.96, 0.96, 0.96), "fabric")
        )
    feats = ["double" if s["double"] else "single", "pillows"]
    if s["tall_head"]:
        feats.append("headboard")
    return Item("bed", parts, [s["color"]], [s["frame_mat"]], feats, s)


# ----------------------------------------------------------------------------- cabinet
_CAB_DIMS = {
    "wardrobe": ((0.9, 1.6), (0.55, 0.62), (1.8, 2.1)),
    "sideboard": ((1.0, 1.8), (0.4, 0.5), (0.5, 0.8)),
    "nightstand": ((0.4, 0.5), (0.35, 0.42), (0.45, 0.55)),
    "counter": ((1.2, 2.2), (0.58, 0.62), (0.88, 0.9)),
    "bathroom": ((0.5, 0.7), (0.35, 0.45), (0.75, 0.85)),
    "hall": ((0.8, 1.2), (0.3, 0.35), (0.8, 0.95)),
}


def build_cabinet(rng, room, style=None, kind: Optional[str] = None) -> Item:
    if style is None:
        kind = kind or "sideboard"
        mat = _pick(rng, ["wood", "metal"], [5, 1])
        color = _pick(
            rng,
            ["white", "brown", "gray", "black", "blue"],
            [4, 4, 2, 1, 1 if kind == "counter" else 0],
        )
        (w0, w1), (d0, d1), (h0, h1) = _CAB_DIMS[kind]
        front = (
            "drawers"
            if kind in ("nightstand",)
            else _pick(
                rng,
                ["doors", "drawers", "glass door"],
                [5, 3, 2 if kind in ("sideboard", "wardrobe", "hall") else 0],
            )
        )
        style = dict(
            kind=kind,
            mat=mat,
            color=color,
            tone=_tone(rng),
            w=_u(rng, w0, w1),
            d=_u(rng, d0, d1),
            h=_u(rng, h0, h1),
            front=front,
        )
    s = style
    col = rgb(s["color"], s["tone"])
    w, d, h, mat = s["w"], s["d"], s["h"], s["mat"]
    parts = [
        box((0, 0.05 + (h - 0.05) / 2, -0.01), (w, h - 0.05, d - 0.02), col, mat),
        box((0, 0.025, -0.02), (w - 0.06, 0.05, d - 0.06), tuple(c * 0.6 for c in col), mat),
    ]
    feats = []
    darker = tuple(c * 0.88 for c in col)
    fz = d / 2 - 0.01
    if s["kind"] == "counter":
        parts.append(box((0, h + 0.015, 0.0), (w, 0.03, d), (0.25, 0.25, 0.27), "marble"))
    if s["front"] == "drawers":
        n = max(2, int(round((h - 0.1) / 0.22)))
        dh = (h - 0.1) / n
        for k in range(n):
            y = 0.07 + dh * (k + 0.5)
            parts.append(box((0, y, fz), (w - 0.06, dh - 0.03, 0.02), darker, mat))
            parts.append(
                box((0, y + dh * 0.2, fz + 0.02), (min(0.2, w / 3), 0.02, 0.02), _STEEL, "metal")
            )
        feats.append("drawers")
    else:
        nd = max(1, int(round(w / 0.5)))
        dw = (w - 0.04) / nd
        glass = s["front"] == "glass door"
        for k in range(nd):
            x = -w / 2 + 0.02 + dw * (k + 0.5)
            if glass:
                parts.append(
                    box(
                        (x, 0.05 + (h - 0.05) / 2, fz),
                        (dw - 0.06, h - 0.2, 0.02),
                        (0.72, 0.84, 0.9),
                        "glass",
                    )
                )
            else:
                parts.append(
                    box((x, 0.05 + (h - 0.05) / 2, fz), (dw - 0.03, h - 0.12, 0.02), darker, mat)
                )
            hx = x + (dw / 2 - 0.06) * (1 if k % 2 == 0 else -1)
            parts.append(
                box((hx, min(h * 0.55, 1.1), fz + 0.02), (0.02, 0.14, 0.02), _STEEL, "metal")
            )
        feats.append("glass door" if glass else "doors")
    feats.append({"wardrobe": "tall", "nightstand": "small"}.get(s["kind"], "low"))
    return Item("cabinet", parts, [s["color"]], [mat], feats, s)


# ----------------------------------------------------------------------------- plant
def build_plant(rng, room, style=None) -> Item:
    if style is None:
        tall = bool(rng.random() < 0.5)
        style = dict(
            tall=tall,
            pot_mat=_pick(rng, ["ceramic", "plastic"], [3, 1]),
            pot_color=_pick(rng, ["white", "orange", "black", "gray", "blue"], [3, 3, 2, 1, 1]),
            flower=_pick(rng, ["", "red", "pink", "yellow", "white"], [6, 1, 1, 1, 1])
            if not tall
            else "",
            r=_u(rng, 0.14, 0.2),
            h=_u(rng, 1.1, 1.6) if tall else _u(rng, 0.45, 0.7),
            seed=int(rng.integers(1 << 30)),
        )
    s = style
    prng = np.random.default_rng(s["seed"])
    r, h = s["r"], s["h"]
    pot_h = 0.32 if s["tall"] else 0.22
    parts = [
        cylinder(
            (0, 0, 0), r * 0.8, pot_h, rgb(s["pot_color"]), s["pot_mat"], segments=10, top_radius=r
        ),
        cylinder((0, pot_h - 0.02, 0), r * 0.92, 0.02, (0.25, 0.17, 0.1), "fabric", segments=10),
    ]
    leaf = rgb("green", 0.85)
    if s["tall"]:
        parts.append(
            cylinder(
                (0, pot_h, 0), 0.025, h * 0.6, (0.35, 0.25, 0.15), "wood", segments=5, caps=False
            )
        )
        for k in range(3):
            y = pot_h + (h - pot_h) * (0.45 + 0.22 * k)
            ox, oz = prng.uniform(-0.08, 0.08, 2)
            rr = (0.3 - 0.05 * k) * (r / 0.17)
            parts.append(sphere((ox, y, oz), (rr, rr * 0.75, rr), leaf, "leaf"))
    else:
        rr = r * 1.5
        parts.append(sphere((0, pot_h + rr * 0.7, 0), (rr, h - pot_h - rr * 0.7, rr), leaf, "leaf"))
        if s["flower"]:
            for k in range(5):
                a = 2 * np.pi * k / 5 + prng.uniform(0, 0.5)
                parts.append(
                    sphere(
                        (
                            0.7 * rr * np.cos(a),
                            pot_h + rr * 0.7 + (h - pot_h - rr * 0.7) * 0.6,
                            0.7 * rr * np.sin(a),
                        ),
                        (0.05, 0.05, 0.05),
                        rgb(s["flower"]),
                        "fabric",
                        subdivisions=0,
                    )
                )
    colors = ["green"] + ([s["flower"]] if s["flower"] else [])
    feats = ["tall" if s["tall"] else "small", f"{s['pot_color']} pot"]
    if s["flower"]:
        feats.append("flowering")
    return Item("plant", parts, colors, [s["pot_mat"]], feats, s)


# ----------------------------------------------------------------------------- tv
def build_tv(rng, room, style=None, mount: str = "stand") -> Item:
    if style is None:
        w = _u(rng, 0.8, 1.4)
        style = dict(
            w=w,
            color=_pick(rng, ["black", "silver", "white"], [6, 2, 1]),
            mat=_pick(rng, ["plastic", "metal"], [2, 1]),
            mount=mount,
        )
    s = style
    w = s["w"]
    h = w * 9 / 16
    col = rgb(s["color"])
    parts = []
    feats = ["large" if w >= 1.1 else "small"]
    if s["mount"] == "stand":
        parts.append(box((0, 0.01, 0), (0.35, 0.02, 0.2), col, s["mat"]))
        parts.append(box((0, 0.06, -0.02), (0.06, 0.1, 0.04), col, s["mat"]))
        y0 = 0.08
        feats.append("on a stand")
    else:
        y0 = 0.0
        feats.append("wall-mounted")
    parts.append(box((0, y0 + h / 2, -0.02), (w, h, 0.05), col, s["mat"]))
    parts.append(
        box((0, y0 + h / 2, 0.006), (w - 0.04, h - 0.04, 0.004), (0.05, 0.06, 0.09), "plastic")
    )
    it = Item(
        "tv",
        parts,
        [s["color"]],
        [s["mat"]],
        feats,
        s,
        mount="wall" if s["mount"] == "wall" else "floor",
    )
    s.setdefault("mount_y", 1.1)
    return it


# ----------------------------------------------------------------------------- bathroom
def build_toilet(rng, room, style=None) -> Item:
    if style is None:
        style = dict(color=_pick(rng, ["white", "black", "gray"], [8, 1, 1]), tone=_tone(rng))
    s = style
    col = rgb(s["color"], s["tone"])
    parts = [
        box((0, 0.8 / 2 + 0.0, -0.3), (0.44, 0.8, 0.18), col, "ceramic"),  # tank
        box((0, 0.81, -0.3), (0.46, 0.03, 0.2), col, "ceramic"),
        box((0, 0.2, -0.08), (0.24, 0.4, 0.3), col, "ceramic"),  # pedestal
        cylinder((0, 0.22, 0.02), 0.19, 0.18, col, "ceramic", segments=12, top_radius=0.2),
        cylinder((0, 0.4, 0.02), 0.2, 0.03, tuple(c * 0.97 for c in col), "ceramic", segments=12),
        box(
            (0, 0.6, -0.2), (0.36, 0.4, 0.03), tuple(c * 0.97 for c in col), "ceramic"
        ),  # raised lid
    ]
    return Item("toilet", parts, [s["color"]], ["ceramic"], ["lid"], s)


def build_sink(rng, room, style=None) -> Item:
    if style is None:
        if room == "kitchen":
            style = dict(
                kind="kitchen",
                color=_pick(rng, ["silver", "white", "black"], [4, 1, 1]),
                mat="metal",
                cab_color=_pick(rng, ["white", "brown", "gray"]),
                w=_u(rng, 0.8, 1.2),
                double=bool(rng.random() < 0.4),
            )
        else:
            kind = _pick(rng, ["pedestal", "vanity"])
            style = dict(
                kind=kind,
                color=_pick(rng, ["white", "gray", "black"], [6, 1, 1]),
                mat="ceramic",
                cab_color=_pick(rng, ["white", "brown", "gray", "blue"]),
                w=_u(rng, 0.55, 0.8),
                double=False,
            )
    s = style
    col = rgb(s["color"])
    w = s["w"]
    parts = []
    feats = []
    if s["kind"] == "pedestal":
        parts.append(
            cylinder((0, 0, -0.05), 0.09, 0.7, col, "ceramic", segments=10, top_radius=0.07)
        )
        parts.append(box((0, 0.78, 0.0), (w, 0.16, 0.45), col, "ceramic"))
        parts.append(
            box((0, 0.855, 0.02), (w - 0.12, 0.012, 0.3), tuple(c * 0.8 for c in col), "ceramic")
        )
        top, zf = 0.86, -0.17
        feats.append("pedestal")
    else:
        d = 0.6 if s["kind"] == "kitchen" else 0.48
        h = 0.9 if s["kind"] == "kitchen" else 0.82
        ccol = rgb(s["cab_color"])
        parts.append(box((0, h / 2, 0), (w, h, d), ccol, "wood"))
        parts.append(
            box(
                (0, h / 2, d / 2 + 0.01),
                (w - 0.05, h - 0.1, 0.02),
                tuple(c * 0.88 for c in ccol),
                "wood",
            )
        )
        parts.append(box((0, h + 0.015, 0), (w + 0.02, 0.03, d + 0.02), col, s["mat"]))
        nb = 2 if s["double"] else 1
        bw = (w - 0.2) / nb
        for k in range(nb):
            x = -w / 2 + 0.1 + bw * (k + 0.5)
            parts.append(
                box(
                    (x, h + 0.031, 0.03),
                    (bw - 0.04, 0.002, d - 0.22),
                    tuple(c * 0.7 for c in col),
                    s["mat"],
                )
            )
        top, zf = h + 0.03, -d / 2 + 0.06
        feats.append("with cabinet")
        if s["double"]:
            feats.append("double basin")
    parts.append(box((0, top + 0.12, zf), (0.03, 0.24, 0.03), _STEEL, "metal"))
    parts.append(box((0, top + 0.23, zf + 0.07), (0.03, 0.025, 0.14), _STEEL, "metal"))
    return Item("sink", parts, [s["color"]], [s["mat"]], feats, s)


def build_bathtub(rng, room, style=None) -> Item:
    if style is None:
        style = dict(
            color=_pick(rng, ["white", "gray", "black"], [8, 1, 1]),
            l=_u(rng, 1.5, 1.7),
            w=_u(rng, 0.7, 0.8),
        )
    s = style
    col = rgb(s["color"])
    l, w, h, t = s["l"], s["w"], 0.55, 0.08
    parts = [box((0, 0.05, 0), (l, 0.1, w), col, "ceramic")]
    for sz in (-1, 1):
        parts.append(box((0, h / 2, sz * (w / 2 - t / 2)), (l, h, t), col, "ceramic"))
    for sx in (-1, 1):
        parts.append(box((sx * (l / 2 - t / 2), h / 2, 0), (t, h, w - 2 * t), col, "ceramic"))
    parts.append(
        box((0, 0.105, 0), (l - 2 * t, 0.01, w - 2 * t), tuple(c * 0.85 for c in col), "ceramic")
    )
    parts.append(box((-l / 2 + 0.15, h + 0.1, -w / 2 + 0.03), (0.03, 0.2, 0.03), _STEEL, "metal"))
    return Item("bathtub", parts, [s["color"]], ["ceramic"], ["rectangular"], s)


def build_towel(rng, room, style=None) -> Item:
    if style is None:
        striped = bool(rng.random() < 0.25)
        style = dict(
            color=_pick(
                rng,
                ["white", "blue", "red", "yellow", "gray", "green", "pink", "beige"],
                [3, 3, 1, 1, 2, 1, 1, 1],
            ),
            stripe=_pick(rng, ["white", "blue", "red", "gray"]) if striped else "",
            w=_u(rng, 0.45, 0.65),
            mount_y=_u(rng, 0.55, 0.75),
        )
        if style["stripe"] == style["color"]:
            style["stripe"] = "black"
    s = style
    col = rgb(s["color"])
    w = s["w"]
    hang = 0.7
    parts = [
        box((0, hang + 0.05, -0.045), (w + 0.15, 0.02, 0.02), _STEEL, "metal"),
        box((-w / 2 - 0.07, hang + 0.05, -0.07), (0.02, 0.02, 0.06), _STEEL, "metal"),
        box((w / 2 + 0.07, hang + 0.05, -0.07), (0.02, 0.02, 0.06), _STEEL, "metal"),
        box((0, hang / 2 + 0.06, -0.03), (w, hang, 0.025), col, "fabric"),
        box((0, hang * 0.7 / 2 + 0.06 + hang * 0.3, -0.06), (w, hang * 0.7, 0.02), col, "fabric"),
    ]
    colors = [s["color"]]
    feats = ["hanging"]
    if s["stripe"]:
        for k in range(2):
            parts.append(
                box((0, 0.14 + 0.08 * k, -0.016), (w, 0.03, 0.004), rgb(s["stripe"]), "fabric")
            )
        colors.append(s["stripe"])
        feats.append("striped")
    return Item("towel", parts, colors, ["fabric"], feats, s, mount="wall")


def build_bath_mat(rng, room, style=None) -> Item:
    if style is None:
        style = dict(
            color=_pick(rng, ["blue", "white", "gray", "green", "beige", "pink"]),
            round=bool(rng.random() < 0.3),
            w=_u(rng, 0.7, 0.9),
            d=_u(rng, 0.45, 0.55),
        )
    s = style
    col = rgb(s["color"])
    if s["round"]:
        parts = [cylinder((0, 0, 0), s["d"] * 0.75, 0.015, col, "fabric", segments=16)]
        feats = ["round"]
    else:
        parts = [box((0, 0.0075, 0), (s["w"], 0.015, s["d"]), col, "fabric")]
        feats = ["rectangular"]
    return Item("bath mat", parts, [s["color"]], ["fabric"], feats, s)


# ----------------------------------------------------------------------------- lamp
def build_lamp(rng, room, style=None, kind: str = "floor") -> Item:
    if style is None:
        style = dict(
            kind=kind,
            color=_pick(rng, ["white", "beige", "black", "gray", "yellow"], [4, 3, 2, 1, 1]),
            mat=_pick(rng, ["metal", "ceramic", "wood"], [4, 2, 1]),
            h=_u(rng, 1.45, 1.7) if kind == "floor" else _u(rng, 0.4, 0.55),
        )
    s = style
    shade = rgb(s["color"])
    body = {"metal": (0.25, 0.25, 0.27), "ceramic": (0.85, 0.85, 0.82), "wood": (0.45, 0.28, 0.15)}[
        s["mat"]
    ]
    h = s["h"]
    if s["kind"] == "floor":
        parts = [
            cylinder((0, 0, 0), 0.16, 0.03, body, s["mat"], segments=12),
            cylinder((0, 0.03, 0), 0.015, h - 0.33, body, s["mat"], segments=6, caps=False),
            cylinder((0, h - 0.35, 0), 0.2, 0.35, shade, "fabric", segments=12, top_radius=0.13),
        ]
        feats = ["floor lamp"]
    else:
        parts = [
            cylinder((0, 0, 0), 0.07, 0.02, body, s["mat"], segments=10),
            cylinder((0, 0.02, 0), 0.06, h * 0.5, body, s["mat"], segments=10, top_radius=0.04),
            cylinder((0, h * 0.5, 0), 0.13, h * 0.5, shade, "fabric", segments=12, top_radius=0.09),
        ]
        feats = ["table lamp"]
    return Item("lamp", parts, [s["color"]], [s["mat"]], feats, s)


# ----------------------------------------------------------------------------- shelf
def build_shelf(rng, room, style=None, shallow: bool = False) -> Item:
    if style is None:
        tall = bool(rng.random() < 0.6) and not shallow
        style = dict(
            mat=_pick(rng, ["wood", "metal"], [4, 1]),
            color=_pick(rng, ["brown", "white", "black"], [4, 3, 2]),
            tone=_tone(rng),
            w=_u(rng, 0.6, 1.1),
            d=0.25 if shallow else _u(rng, 0.3, 0.36),
            h=_u(rng, 1.7, 2.0) if tall else _u(rng, 0.8, 1.1),
            books=bool(rng.random() < 0.7),
            seed=int(rng.integers(1 << 30)),
        )
    s = style
    col = rgb(s["color"], s["tone"])
    w, d, h, mat = s["w"], s["d"], s["h"], s["mat"]
    t = 0.025
    parts = [
        box((-w / 2 + t / 2, h / 2, 0), (t, h, d), col, mat),
        box((w / 2 - t / 2, h / 2, 0), (t, h, d), col, mat),
        box((0, h / 2, -d / 2 + 0.005), (w - 2 * t, h, 0.01), tuple(c * 0.8 for c in col), mat),
    ]
    n = max(2, int(round(h / 0.38)))
    gap = (h - t) / n
    brng = np.random.default_rng(s["seed"])
    book_cols = [
        rgb(c) for c in ("red", "blue", "green", "yellow", "white", "black", "orange", "beige")
    ]
    for k in range(n + 1):
        y = k * gap
        parts.append(box((0, y + t / 2, 0), (w - 2 * t, t, d), col, mat))
        if s["books"] and k < n and brng.random() < 0.8:
            x = -w / 2 + t + 0.02
            for _ in range(int(brng.integers(1, 4))):
                bw = float(brng.uniform(0.08, 0.22))
                if x + bw > w / 2 - t - 0.02:
                    break
                bh = min(gap - 0.06, float(brng.uniform(0.18, 0.28)))
                parts.append(
                    box(
                        (x + bw / 2, y + t + bh / 2, 0.0),
                        (bw, bh, d * 0.75),
                        book_cols[int(brng.integers(len(book_cols)))],
                        "paper",
                    )
                )
                x += bw + float(brng.uniform(0.02, 0.15))
    feats = ["tall" if h > 1.5 else "low", "open"]
    if s["books"]:
        feats.append("with books")
    return Item("shelf", parts, [s["color"]], [mat], feats, s)


# ----------------------------------------------------------------------------- kitchen
def build_refrigerator(rng, room, style=None) -> Item:
    if style is None:
        double = bool(rng.random() < 0.3)
        style = dict(
            color=_pick(rng, ["white", "silver", "black"], [3, 3, 1]),
            double=double,
            w=_u(rng, 0.85, 0.95) if double else _u(rng, 0.6, 0.72),
            h=_u(rng, 1.75, 1.9),
        )
    s = style
    col = rgb(s["color"])
    w, d, h = s["w"], 0.66, s["h"]
    dk = tuple(c * 0.9 for c in col)
    parts = [box((0, h / 2, -0.02), (w, h, d - 0.04), col, "metal")]
    fz = d / 2 - 0.015
    if s["double"]:
        for sx in (-1, 1):
            parts.append(box((sx * w / 4, h / 2, fz), (w / 2 - 0.015, h - 0.04, 0.03), dk, "metal"))
            parts.append(
                box((-sx * 0.04, h * 0.55, fz + 0.03), (0.025, 0.5, 0.025), _STEEL, "metal")
            )
        feats = ["double door"]
    else:
        split = h * 0.35
        parts.append(box((0, split / 2, fz), (w - 0.02, split - 0.02, 0.03), dk, "metal"))
        parts.append(
            box((0, split + (h - split) / 2, fz), (w - 0.02, h - split - 0.02, 0.03), dk, "metal")
        )
        parts.append(
            box((w / 2 - 0.07, split - 0.12, fz + 0.03), (0.025, 0.18, 0.025), _STEEL, "metal")
        )
        parts.append(
            box((w / 2 - 0.07, split + 0.3, fz + 0.03), (0.025, 0.35, 0.025), _STEEL, "metal")
        )
        feats = ["bottom freezer"]
    return Item("refrigerator", parts, [s["color"]], ["metal"], feats, s)


def build_stove(rng, room, style=None) -> Item:
    if style is None:
        style = dict(
            color=_pick(rng, ["white", "black", "silver"], [2, 2, 3]), w=_u(rng, 0.58, 0.62)
        )
    s = style
    col = rgb(s["color"])
    w, d, h = s["w"], 0.6, 0.88
    parts = [
        box((0, h / 2, 0), (w, h, d), col, "metal"),
        box((0, h + 0.01, 0), (w - 0.02, 0.02, d - 0.02), (0.08, 0.08, 0.09), "plastic"),
        box((0, 0.42, d / 2 + 0.006), (w - 0.12, 0.4, 0.012), (0.1, 0.1, 0.12), "plastic"),
        box((0, 0.7, d / 2 + 0.02), (w - 0.1, 0.025, 0.025), _STEEL, "metal"),
    ]
    for sx in (-1, 1):
        for sz in (-1, 1):
            parts.append(
                cylinder(
                    (sx * w / 4.5, h + 0.02, sz * d / 4.5),
                    0.075 if sz < 0 else 0.06,
                    0.005,
                    (0.3, 0.3, 0.32),
                    "metal",
                    segments=10,
                )
            )
    for k in range(4):
        parts.append(
            box(
                (-w / 2 + 0.1 + k * (w - 0.2) / 3, h - 0.06, d / 2 + 0.01),
                (0.035, 0.035, 0.02),
                _STEEL,
                "metal",
            )
        )
    return Item("stove", parts, [s["color"]], ["metal"], ["four burners", "oven"], s)


def build_stool(rng, room, style=None) -> Item:
    if style is None:
        tall = bool(rng.random() < 0.5)
        mat = _pick(rng, ["wood", "metal"], [3, 2])
        style = dict(
            tall=tall,
            mat=mat,
            color=_pick(rng, ["brown", "black", "white", "red"], [3, 3, 2, 1]),
            h=_u(rng, 0.65, 0.75) if tall else _u(rng, 0.42, 0.48),
            r=_u(rng, 0.16, 0.2),
        )
    s = style
    col = rgb(s["color"])
    h, r = s["h"], s["r"]
    parts = [cylinder((0, h - 0.04, 0), r, 0.04, col, s["mat"], segments=12)]
    for k in range(4):
        a = np.pi / 4 + k * np.pi / 2
        parts.append(
            box(
                (0.7 * r * np.cos(a), (h - 0.04) / 2, 0.7 * r * np.sin(a)),
                (0.035, h - 0.04, 0.035),
                col,
                s["mat"],
            )
        )
    if s["tall"]:
        parts.append(box((0, 0.25, 0), (1.4 * r, 0.02, 0.02), col, s["mat"]))
    return Item(
        "stool", parts, [s["color"]], [s["mat"]], ["round", "tall" if s["tall"] else "low"], s
    )


def build_picture(rng, room, style=None) -> Item:
    if style is None:
        large = bool(rng.random() < 0.4)
        style = dict(
            color=_pick(rng, ["black", "brown", "white", "gold"], [3, 3, 2, 1]),
            mat=_pick(rng, ["wood", "metal"], [3, 1]),
            w=_u(rng, 0.8, 1.2) if large else _u(rng, 0.4, 0.7),
            ratio=_u(rng, 0.6, 0.85),
            paint=[
                _pick(rng, ["blue", "green", "orange", "red", "yellow", "beige", "white", "gray"])
                for _ in range(3)
            ],
            mount_y=_u(rng, 1.3, 1.5),
        )
    s = style
    w = s["w"]
    h = w * s["ratio"]
    parts = [box((0, h / 2, -0.015), (w, h, 0.03), rgb(s["color"]), s["mat"])]
    cw, ch = w - 0.08, h - 0.08
    parts.append(
        box((0, 0.04 + ch * 0.3, 0.002), (cw, ch * 0.6, 0.006), rgb(s["paint"][0]), "paint")
    )
    parts.append(
        box((0, 0.04 + ch * 0.8, 0.002), (cw, ch * 0.4, 0.006), rgb(s["paint"][1]), "paint")
    )
    parts.append(
        box(
            (cw * 0.15, 0.04 + ch * 0.55, 0.007),
            (cw * 0.3, ch * 0.3, 0.004),
            rgb(s["paint"][2]),
            "paint",
        )
    )
    return Item(
        "picture",
        parts,
        [s["color"]],
        [s["mat"]],
        ["framed", "large" if w >= 0.8 else "small"],
        s,
        mount="wall",
    )


def build_mirror(rng, room, style=None, kind: str = "wall") -> Item:
    """A framed mirror: ``wall`` (over a sink, mounted high) or ``tall`` (full length, near the floor)."""
    if style is None:
        tall = kind == "tall"
        style = dict(
            kind=kind,
            color=_pick(rng, ["black", "white", "brown", "gold", "silver"], [3, 3, 2, 1, 1]),
            mat=_pick(rng, ["wood", "metal"], [1, 1]),
            w=_u(rng, 0.45, 0.6) if tall else _u(rng, 0.5, 0.8),
            h=_u(rng, 1.4, 1.6) if tall else _u(rng, 0.6, 0.85),
            mount_y=0.25 if tall else 1.2,
        )
    s = style
    w, h = s["w"], s["h"]
    parts = [
        box((0, h / 2, -0.015), (w, h, 0.03), rgb(s["color"]), s["mat"]),
        box((0, h / 2, 0.002), (w - 0.08, h - 0.08, 0.006), (0.78, 0.86, 0.9), "glass"),
    ]
    feats = ["framed", "full-length" if s["kind"] == "tall" else "rectangular"]
    return Item("mirror", parts, [s["color"]], [s["mat"], "glass"], feats, s, mount="wall")


BUILDERS: Dict[str, Callable[..., Item]] = {
    "chair": build_chair,
    "table": build_table,
    "desk": build_desk,
    "sofa": build_sofa,
    "bed": build_bed,
    "cabinet": build_cabinet,
    "plant": build_plant,
    "tv": build_tv,
    "toilet": build_toilet,
    "sink": build_sink,
    "bathtub": build_bathtub,
    "towel": build_towel,
    "bath mat": build_bath_mat,
    "lamp": build_lamp,
    "shelf": build_shelf,
    "refrigerator": build_refrigerator,
    "stove": build_stove,
    "stool": build_stool,
    "picture": build_picture,
    "mirror": build_mirror,
}
