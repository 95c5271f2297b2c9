"""Reading HM3D semantic annotations: ``<id>.semantic.txt`` and ``<id>.semantic.glb``.

``semantic.txt`` is a header line (``HM3D Semantic Annotations``) then one line per object,
``object_id,HEXCOLOR,"category",region_id``. ``semantic.glb`` paints each object in its
colour, in one of two ways (both read here, per primitive):

- **texture** (HM3D v0.2, ``has_semantic_textures``): every texel of a primitive's base
  colour texture is an object's colour. Objects may exist only as texels painted onto
  another mesh (a picture on a wall) and one triangle may span several objects. Each
  triangle is rasterised in UV space at the texture's resolution; every texel centre it
  covers gets the 3D surface point interpolated barycentrically from the triangle's
  vertices, and an object's box is the box of its texels' surface points. Work is
  vectorised in chunks of a few million texels with a progress bar, so a whole HM3D scene
  (tens of millions of texels) takes seconds to a minute.
- **vertex colours** (``COLOR_0``, the generator's files and many exporters): each vertex
  carries its object's colour. habitat-sim reads a ``.glb``'s ``COLOR_0`` as linear and
  converts it to sRGB before the lookup; some exporters store the sRGB bytes directly.
  Both readings are tried and the one that matches more vertices to ``semantic.txt`` is
  used (reported as ``color_encoding``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from habitat_mosnav.dataset_building.common import BuildError
from habitat_mosnav.scenes import gltf
from habitat_mosnav.scenes import io as scene_io

UP_AXIS_CHOICES = ("auto", "y", "z")
#: Texel candidates handled per vectorised step (memory ~ 100 bytes each).
TEXEL_CHUNK = 1 << 20
#: Texel rows handled per vectorised step of triangle set-up.
ROW_CHUNK = 1 << 18


@dataclass
class AnnotatedObject:
    """One ``semantic.txt`` line plus what the build adds: its box and canonical category."""

    object_id: int
    color_hex: str
    raw_category: str
    region_id: int
    lo: Optional[np.ndarray] = None  # world AABB (Y up) of the object's texels / vertices
    hi: Optional[np.ndarray] = None
    samples: int = 0  # texels + vertices that carry the object's colour
    category: str = ""  # canonical category (after normalisation), set by extract

    @property
    def aabb_min(self) -> np.ndarray:
        return self.lo

    @property
    def aabb_max(self) -> np.ndarray:
        return self.hi


def read_annotations(path: Path) -> List[AnnotatedObject]:
    """``<id>.semantic.txt`` through the one parser (``habitat_mosnav.scenes.io``); a bad
    file is a one-line ``BuildError`` naming the file, line and field."""
    try:
        records = scene_io.read_semantic_txt(str(path))
    except scene_io.SceneFormatError as e:
        raise BuildError(str(e)) from None
    return [
        AnnotatedObject(r.object_id, r.color_hex, r.category.strip(), r.region_id) for r in records
    ]


def resolve_up_axis(render_glb: Path, option: str = "auto") -> str:
    """'y'/'z': the up axis of a scene's meshes, decided as the simulator decides it.

    'auto' (default): the ``up_axis`` of ``<id>.mosnav_meta.json`` when present, else Z up for
    a ``.glb`` as in habitat-sim, which is right for HM3D and MP3D without any flag.
    """
    try:
        return scene_io.scene_up_axis(str(render_glb), option)
    except scene_io.SceneFormatError as e:
        raise BuildError(str(e)) from None
    except ValueError:
        raise BuildError(
            f"--up-axis must be one of {', '.join(UP_AXIS_CHOICES)}, got {option!r}"
        ) from None


class _Boxes:
    """Per-object running AABBs and sample counts (object index = position in ``keys``)."""

    def __init__(self, n: int):
        self.lo = np.full((n, 3), np.inf)
        self.hi = np.full((n, 3), -np.inf)
        self.n = np.zeros(n, dtype=np.int64)

    def add(self, idx: np.ndarray, pts: np.ndarray, count: bool = True) -> None:
        keep = idx >= 0
        idx, pts = idx[keep], pts[keep]
        if not len(idx):
            return
        order = np.argsort(idx)  # any order within an object: min / max only
        idx, pts = idx[order], pts[order]
        uniq, start = np.unique(idx, return_index=True)
        self.lo[uniq] = np.minimum(self.lo[uniq], np.minimum.reduceat(pts, start, axis=0))
        self.hi[uniq] = np.maximum(self.hi[uniq], np.maximum.reduceat(pts, start, axis=0))
        if count:
            self.n[uniq] += np.diff(np.append(start, len(idx)))


def _texel_coords(uv: np.ndarray, faces: np.ndarray, shape) -> Tuple[np.ndarray, np.ndarray]:
    """Triangles in texel coordinates (F, 3, 2) and the mask of those with UV area."""
    h, w = shape[:2]
    px = uv[faces] * np.array([w, h], dtype=np.float64)  # glTF: v runs down the image
    e1, e2 = px[:, 1] - px[:, 0], px[:, 2] - px[:, 0]
    det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    return px, np.abs(det) >= 1e-12


def _chunks(sizes: np.ndarray, limit: int):
    """Consecutive [start, stop) ranges whose ``sizes`` sum to <= ``limit`` (>= 1 item each)."""
    ends = np.cumsum(sizes)
    start = 0
    while start < len(sizes):
        base = ends[start] - sizes[start]
        stop = max(start + 1, int(np.searchsorted(ends, base + limit, side="right")))
        yield start, stop
        start = stop


def _scanlines(px: np.ndarray):
    """Per triangle (texel coordinates, non-degenerate) the barycentric coordinates of a
    texel centre as affine functions of its column: for texel row ``y`` (centre y + .5),
    l1 = a1 + b1 * xc, l2 = a2 + b2 * xc. Returns per-row arrays (triangle, y, first
    column x0, count n, a1, b1, a2, b2) of exactly the texel centres inside the triangle."""
    a = px[:, 0]
    e1, e2 = px[:, 1] - a, px[:, 2] - a
    det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    i00, i01, i10, i11 = e2[:, 1] / det, -e2[:, 0] / det, -e1[:, 1] / det, e1[:, 0] / det
    mn, mx = px.min(axis=1), px.max(axis=1)
    y0 = np.ceil(mn[:, 1] - 0.5).astype(np.int64)
    ny = np.maximum(np.floor(mx[:, 1] - 0.5).astype(np.int64) - y0 + 1, 0)
    tri = np.repeat(np.arange(len(px)), ny)
    y = y0[tri] + (np.arange(len(tri)) - np.repeat(np.cumsum(ny) - ny, ny))
    dy = y + 0.5 - a[tri, 1]
    b1, b2 = i00[tri], i10[tri]
    a1 = i01[tri] * dy - b1 * a[tri, 0]
    a2 = i11[tri] * dy - b2 * a[tri, 0]
    eps = 1e-9
    lo = mn[tri, 0] - 1.0
    hi = mx[tri, 0] + 1.0
    # constraints l1 >= 0, l2 >= 0, 1 - l1 - l2 >= 0, each A + B * xc >= -eps
    for A, B in ((a1, b1), (a2, b2), (1.0 - a1 - a2, -(b1 + b2))):
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = (-eps - A) / B
        pos, neg = B > 0, B < 0
        lo = np.where(pos, np.maximum(lo, bound), lo)
        hi = np.where(neg, np.minimum(hi, bound), hi)
        hi = np.where((B == 0) & (A < -eps), -np.inf, hi)
    x0 = np.ceil(lo - 0.5).astype(np.int64)
    n = np.maximum(np.floor(hi - 0.5).astype(np.int64) - x0 + 1, 0)
    keep = n > 0
    return tri[keep], y[keep], x0[keep], n[keep], a1[keep], b1[keep], a2[keep], b2[keep]


def _rasterise_primitive(
    world: np.ndarray,
    faces: np.ndarray,
    uv: np.ndarray,
    tex_index: np.ndarray,
    boxes: _Boxes,
    wanted: np.ndarray,
    bar,
    counts: Counter,
) -> None:
    """Add the surface points of every texel centre covered by the primitive's triangles
    to the boxes of the objects whose colour the texel has (``tex_index``: (H, W) object
    index per texel, -1 none). UVs outside [0, 1] wrap (glTF's default sampler).

    Scanline rasterisation in UV space, vectorised: triangles in chunks of <= ROW_CHUNK
    texel rows, rows in chunks of <= TEXEL_CHUNK texels. Along a row the surface point is
    affine in the column, so a run of texels of one object adds only its two end points to
    that object's box (and its length to the object's texel count).
    """
    h, w = tex_index.shape
    px, ok = _texel_coords(uv, faces, tex_index.shape)
    counts["triangles_zero_uv_area"] += int(np.count_nonzero(~ok))
    tri_ids = np.nonzero(ok)[0]
    px = px[ok]
    rows_per_tri = np.maximum(
        np.floor(px[:, :, 1].max(1) - 0.5) - np.ceil(px[:, :, 1].min(1) - 0.5) + 1, 0
    )
    if bar is not None:
        bar.update(int(np.count_nonzero(~ok)))
    for t0, t1 in _chunks(rows_per_tri, ROW_CHUNK):
        tri, y, x0, n, a1, b1, a2, b2 = _scanlines(px[t0:t1])
        f = faces[tri_ids[t0 + tri]]
        va = world[f[:, 0]]
        eb, ec = world[f[:, 1]] - va, world[f[:, 2]] - va
        # surface point at column centre xc: va + l1 * eb + l2 * ec, affine in xc
        for r0, r1 in _chunks(n, TEXEL_CHUNK):
            rn = n[r0:r1]
            total = int(rn.sum())
            row = np.repeat(np.arange(r0, r1), rn)
            k = np.arange(total) - np.repeat(np.cumsum(rn) - rn, rn)
            x = x0[row] + k
            obj = tex_index[np.mod(y[row], h), np.mod(x, w)]
            counts["texels"] += total
            counts["texels_unmatched"] += int(np.count_nonzero(obj < 0))
            # runs of one object within a row: keep their first and last texel
            first = np.ones(total, dtype=bool)
            first[1:] = (obj[1:] != obj[:-1]) | (row[1:] != row[:-1])
            last = np.ones(total, dtype=bool)
            last[:-1] = first[1:]
            ends = np.nonzero(first | last)[0]
            o = obj[ends]
            sel = o >= 0
            sel[sel] = wanted[o[sel]]
            ends, o = ends[sel], o[sel]
            if not len(ends):
                continue
            rr = row[ends]
            xc = x[ends] + 0.5
            l1 = a1[rr] + b1[rr] * xc
            l2 = a2[rr] + b2[rr] * xc
            pts = va[rr] + l1[:, None] * eb[rr] + l2[:, None] * ec[rr]
            boxes.add(o, pts, count=False)
            starts = np.nonzero(first)[0]
            run_len = np.diff(np.append(starts, total))
            ro = obj[starts]
            sel = ro >= 0
            sel[sel] = wanted[ro[sel]]
            boxes.n += np.bincount(ro[sel], weights=run_len[sel], minlength=len(boxes.n)).astype(
                np.int64
            )
        if bar is not None:
            bar.update(t1 - t0)


def _texture_index(img: np.ndarray, keys: np.ndarray, block: int = 256) -> np.ndarray:
    """(H, W) int32 object index (into ``keys``) of every texel, -1 for colours not in
    semantic.txt; computed in row blocks to keep memory at a few bytes per texel."""
    out = np.empty(img.shape[:2], dtype=np.int32)
    for r in range(0, img.shape[0], block):
        out[r : r + block] = gltf.lookup_colors(gltf.pack_rgb(img[r : r + block]), keys)
    return out


def attach_geometry(
    objects: List[AnnotatedObject],
    path: Path,
    up_axis: str = "z",
    wanted: Optional[set] = None,
    progress: bool = False,
) -> Counter:
    """Give each object (of ``wanted`` ids; default all) its world AABB from the semantic
    mesh ``path`` (texels of textured primitives, ``COLOR_0`` vertices of the others).

    Returns counts: ``texels``, ``texels_unmatched``, ``vertices``, ``vertices_unmatched``,
    ``primitives_textured`` / ``_vertex_colours`` / ``_unlabelled`` and ``color_encoding``
    ('linear' or 'srgb', when ``COLOR_0`` is present). A file where no texel and no vertex
    carries a ``semantic.txt`` colour is a one-line ``BuildError``.
    """
    from tqdm.auto import tqdm

    if up_axis not in scene_io.UP_AXES:
        raise BuildError(f"up axis must be 'y' or 'z', got {up_axis!r}")
    path = Path(path)
    try:
        glb = gltf.read_glb(str(path))
    except scene_io.SceneFormatError as e:
        raise BuildError(str(e)) from None
    counts: Counter = Counter()
    keys = np.array(sorted(int(o.color_hex, 16) for o in objects), dtype=np.int64)
    by_key = {int(o.color_hex, 16): o for o in objects}
    want = np.array(
        [wanted is None or by_key[int(k)].object_id in wanted for k in keys], dtype=bool
    )
    boxes = _Boxes(len(keys))
    colour_prims = [p for p in glb.primitives if p.color0 is not None]
    encoding = None
    if colour_prims:
        encoding, stats = gltf.decide_color_encoding(
            np.concatenate([p.color0 for p in colour_prims]), keys
        )
        counts.update(stats)
        counts["color_encoding"] = encoding or "none"
    to8 = gltf.raw8 if encoding == "srgb" else gltf.linear_to_srgb8
    try:
        total = sum(len(p.faces) for p in glb.primitives if p.image is not None)
        with tqdm(
            total=total,
            desc=f"texels {path.name}",
            unit="triangle",
            unit_scale=True,
            disable=not progress or total == 0,
            leave=False,
            dynamic_ncols=True,
        ) as bar:
            # one texture decoded at a time (HM3D has several large ones per scene)
            order = sorted(
                range(len(glb.primitives)),
                key=lambda i: (glb.primitives[i].image is None, glb.primitives[i].image or 0, i),
            )
            current, tex_index = None, None
            for i in order:
                p = glb.primitives[i]
                world = scene_io.file_to_world(p.positions, up_axis)
                if p.image is not None:
                    counts["primitives_textured"] += 1
                    if p.image != current:
                        glb.forget_image(current)
                        current, tex_index = p.image, _texture_index(glb.image(p.image), keys)
                    _rasterise_primitive(world, p.faces, p.uv, tex_index, boxes, want, bar, counts)
                elif p.color0 is not None:
                    counts["primitives_vertex_colours"] += 1
                    idx = gltf.lookup_colors(gltf.pack_rgb(to8(p.color0)), keys)
                    counts["vertices"] += len(idx)
                    counts["vertices_unmatched"] += int(np.count_nonzero(idx < 0))
                    sel = idx >= 0
                    sel[sel] = want[idx[sel]]
                    boxes.add(np.where(sel, idx, -1), world)
                else:
                    counts["primitives_unlabelled"] += 1
    except scene_io.SceneFormatError as e:
        raise BuildError(str(e)) from None
    matched = (counts["texels"] - counts["texels_unmatched"]) + (
        counts["vertices"] - counts["vertices_unmatched"]
    )
    if matched == 0:
        if not glb.primitives or not (colour_prims or counts["primitives_textured"]):
            raise BuildError(
                f"{path}: no semantic colours: no primitive has COLOR_0 or a base colour texture"
            )
        raise BuildError(
            f"{path}: no texel or vertex colour matches a colour of its semantic.txt "
            "(COLOR_0 read as linear, as habitat-sim does, and as sRGB)"
        )
    for i, k in enumerate(keys):
        if boxes.n[i] > 0:
            o = by_key[int(k)]
            o.lo, o.hi, o.samples = boxes.lo[i].copy(), boxes.hi[i].copy(), int(boxes.n[i])
    return counts


#: Extra clean category names to drop (``--drop``); structure, placeholders and annotator
#: notes are dropped by the category table (:mod:`.categories`).
DEFAULT_DROP: Tuple[str, ...] = ()
