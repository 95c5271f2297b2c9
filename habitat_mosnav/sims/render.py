"""RGB / depth / semantic rendering with moderngl on a headless EGL context.

One GL context per process, shared by every simulator instance (Mesa's llvmpipe on a CPU
machine, the GPU driver where there is one). RGB samples the mesh's base-colour textures
at their UVs (Basis ones decoded at load, see ``geometry.basis_glb_to_png_glb``), or its
vertex colours, with simple two-sided lighting (:func:`face_shade`, one factor per face,
baked into the vertex data at load); depth is planar (camera z) in metres, as habitat-sim; semantic
draws ``<id>.semantic.glb`` with each vertex's object id (0 where nothing is annotated), or,
with semantic textures (HM3D v0.2), the object id of the texel under each pixel.

The RGB + depth pass draws only the chunks of the scene that the camera can see (frustum
and occlusion tests, :mod:`.render_cull`, switched by :class:`Culling`), with the same
pixels as drawing them all.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.sims import render_cull

EGL_HINT = (
    "install the EGL/Mesa system libraries (Debian/Ubuntu: apt-get install libegl1 "
    "libegl-mesa0 libgl1-mesa-dri), or set habitat.simulator.mosnav_mesh.render=False "
    "and use no visual sensors"
)

_VS_COLOR = """
#version 330
uniform mat4 mvp;
uniform mat4 view;
in vec3 in_pos;
in vec3 in_col;
in vec2 in_uv;
out vec3 v_col;
out vec2 v_uv;
out float v_depth;
void main() {
    gl_Position = mvp * vec4(in_pos, 1.0);
    v_col = in_col;
    v_uv = in_uv;
    v_depth = -(view * vec4(in_pos, 1.0)).z;
}
"""

# two variants (textured or vertex colours): llvmpipe would otherwise sample the texture
# for every fragment of a vertex-coloured face, the select done after both sides; v_col is
# the shaded vertex colour, or for a textured face its shade alone (see _expand)
_FS_COLOR = """
#version 330
in vec3 v_col;
in vec2 v_uv;
in float v_depth;
uniform sampler2D tex;
layout(location = 0) out vec4 out_col;
layout(location = 1) out float out_depth;
void main() {
    out_col = vec4(clamp(BASE, 0.0, 1.0), 1.0);
    out_depth = v_depth;
}
"""
_BASE_TEX, _BASE_COL = "texture(tex, v_uv).rgb * v_col", "v_col"
#: the colour pass's vertex format: position, shaded colour, UV (32 bytes a vertex)
_COLOR_FORMAT = ("3f 3f 2f", "in_pos", "in_col", "in_uv")
#: the two lights of :func:`face_shade` (unit vectors, float32 as the GPU would hold them)
_LIGHTS = np.array([[0.35, 1.0, 0.25], [-0.5, 0.3, -0.8]], np.float32)
_LIGHTS /= np.linalg.norm(_LIGHTS, axis=1, keepdims=True)

# depth only (occluders and occlusion boxes): the same position as _VS_COLOR's
_VS_DEPTH = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
void main() {
    gl_Position = mvp * vec4(in_pos, 1.0);
}
"""

_FS_DEPTH = """
#version 330
void main() {}
"""

_VS_SEM = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
in float in_id;
flat out float v_id;
void main() {
    gl_Position = mvp * vec4(in_pos, 1.0);
    v_id = in_id;
}
"""

# ``only`` >= 0: draw that object alone (the image-goals stage's unoccluded silhouette)
_FS_SEM = """
#version 330
flat in float v_id;
uniform float only;
layout(location = 0) out float out_id;
void main() {
    if (only >= 0.0 && abs(v_id - only) > 0.5) discard;
    out_id = v_id;
}
"""

# HM3D v0.2 semantic textures: each texel is an object id (row 0 = top of the image, glTF
# UVs with v down); nearest texel, clamped to the edge, as habitat-sim samples its R16UI
# id texture (Nearest filters, ClampToEdge, level 0 only)
_VS_SEM_TEX = """
#version 330
uniform mat4 mvp;
in vec3 in_pos;
in vec2 in_uv;
out vec2 v_uv;
void main() {
    gl_Position = mvp * vec4(in_pos, 1.0);
    v_uv = in_uv;
}
"""

_FS_SEM_TEX = """
#version 330
in vec2 v_uv;
uniform sampler2D ids;
uniform float only;
layout(location = 0) out float out_id;
void main() {
    ivec2 size = textureSize(ids, 0);
    ivec2 texel = clamp(ivec2(floor(v_uv * vec2(size))), ivec2(0), size - 1);
    float id = texelFetch(ids, texel, 0).r;
    if (only >= 0.0 && abs(id - only) > 0.5) discard;
    out_id = id;
}
"""


class RenderError(RuntimeError):
    pass


class CameraSpec:
    """Plain-Python copy of one visual sensor's config (OmegaConf reads are slow per step)."""

    def __init__(self, uuid: str, kind: str, config) -> None:
        self.uuid = uuid
        self.kind = kind
        self.width = int(config.width)
        self.height = int(config.height)
        self.hfov = float(config.hfov)
        self.position = np.asarray([float(v) for v in config.position], np.float64)
        ox, oy, oz = (float(v) for v in config.orientation)
        # habitat-sim applies the sensor orientation as rotateX, then rotateY, then rotateZ
        self.rotation = _rz(oz) @ _ry(oy) @ _rx(ox)


def _rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]], np.float64)


def _ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]], np.float64)


def _rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], np.float64)


def _perspective(hfov_deg: float, width: int, height: int, near: float, far: float) -> np.ndarray:
    tx = math.tan(math.radians(hfov_deg) / 2.0)
    ty = tx * height / width
    m = np.zeros((4, 4))
    m[0, 0] = 1.0 / tx
    m[1, 1] = 1.0 / ty
    m[2, 2] = -(far + near) / (far - near)
    m[2, 3] = -2.0 * far * near / (far - near)
    m[3, 2] = -1.0
    return m


def _view(pos: np.ndarray, rot: np.ndarray) -> np.ndarray:
    v = np.eye(4)
    v[:3, :3] = rot.T
    v[:3, 3] = -rot.T @ pos
    return v


def face_shade(normals: np.ndarray) -> np.ndarray:
    """(F,) float32 light factor of faces with unit ``normals``: 0.45 + 0.4 |n.L1| +
    0.15 |n.L2|, two-sided (a scan is seen from both sides). Per face, computed once at
    load: per fragment it cost the colour pass a third of its vertex work on llvmpipe."""
    d = np.abs(np.asarray(normals, np.float32) @ _LIGHTS.T)
    return (np.float32(0.45) + np.float32(0.4) * d[:, 0] + np.float32(0.15) * d[:, 1]).astype(
        np.float32
    )


def _expand(
    mesh,
    with_ids: bool,
    faces: Optional[np.ndarray] = None,
    textured: Optional[np.ndarray] = None,
) -> np.ndarray:
    """Unindexed interleaved vertex data (``_COLOR_FORMAT``): a flat shade per face keeps
    box edges crisp; a ``textured`` face's (F,) colour is its shade (the texture is the
    base)."""
    faces = mesh.faces if faces is None else faces
    tris = mesh.vertices[faces]  # (F, 3, 3)
    pos = tris.reshape(-1, 3).astype(np.float32)
    if with_ids:
        ids = mesh.ids[faces].reshape(-1, 1).astype(np.float32)
        return np.concatenate([pos, ids], axis=1)
    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
    shade = np.repeat(face_shade(n), 3)[:, None]
    col = mesh.colors[faces].reshape(-1, 4)[:, :3].astype(np.float32) / np.float32(255.0)
    if textured is not None:
        col[np.repeat(textured, 3)] = 1.0
    uv = (
        mesh.uv[faces].reshape(-1, 2)
        if getattr(mesh, "uv", None) is not None
        else np.zeros((len(pos), 2), np.float32)
    )
    return np.concatenate([pos, col * shade, uv], axis=1).astype(np.float32)


class Culling:
    """What the colour (RGB + depth) pass skips; every switch keeps the frames identical
    except ``backface`` (off by default: see :mod:`.render_cull` and docs/DEVELOPMENT.md).

    ``cell``: chunk size (m) when a scene is loaded (0: one chunk per texture, the draw of
    the whole scene in the file's order); scenes under ``min_faces`` faces are one chunk.
    ``occlusion_rounds``: distances (m) of the occluder rounds: round r draws, depth only,
    the chunks still kept whose boxes lie within that distance of the camera, then tests
    the boxes of the others against that depth; ``occlusion_min_chunks``: fewer chunks
    left in the frustum than this skip the occlusion test. ``prefill``: after an occlusion
    test the colour pass starts from the occluders' depth (pushed back, see
    :mod:`.render_cull`) instead of a cleared one, so that llvmpipe skips the shading of
    fragments behind them."""

    def __init__(
        self,
        frustum: bool = True,
        occlusion: bool = True,
        backface: bool = False,
        cell: float = 1.5,
        min_faces: int = 20000,
        occlusion_rounds: Sequence[float] = (1.5, 3.0, 6.0),
        occlusion_min_chunks: int = 8,
        prefill: bool = True,
    ) -> None:
        self.frustum = frustum
        self.occlusion = occlusion
        self.backface = backface
        self.cell = cell
        self.min_faces = min_faces
        self.occlusion_rounds = tuple(occlusion_rounds)
        self.occlusion_min_chunks = occlusion_min_chunks
        self.prefill = prefill

    def layout(self, num_faces: int) -> float:
        """The chunk size a scene of ``num_faces`` faces is split with."""
        return self.cell if num_faces >= self.min_faces else 0.0


class Renderer:
    """Owns the process's GL context, programs and framebuffers."""

    near = 0.01
    far = 100.0
    #: polygon offset units that push the occluders' depth back when the colour pass
    #: starts from it (``Culling.prefill``): see :mod:`.render_cull`
    prefill_units = 4.0

    def __init__(self) -> None:
        try:
            import moderngl
        except Exception as exc:  # noqa: BLE001
            raise RenderError(
                f"MosNavMeshSim-v0 rendering needs moderngl ({exc}); pip install moderngl"
            ) from None
        try:
            self.ctx = moderngl.create_context(standalone=True, backend="egl")
        except Exception as exc:  # noqa: BLE001
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RenderError(
                f"MosNavMeshSim-v0: no headless EGL OpenGL context ({msg}); {EGL_HINT}"
            ) from None
        self.moderngl = moderngl
        self.lock = threading.RLock()
        ctx = self.ctx
        self.prog_color = ctx.program(
            vertex_shader=_VS_COLOR, fragment_shader=_FS_COLOR.replace("BASE", _BASE_COL)
        )
        self.prog_color_tex = ctx.program(
            vertex_shader=_VS_COLOR, fragment_shader=_FS_COLOR.replace("BASE", _BASE_TEX)
        )
        self.prog_depth = ctx.program(vertex_shader=_VS_DEPTH, fragment_shader=_FS_DEPTH)
        self.prog_sem = ctx.program(vertex_shader=_VS_SEM, fragment_shader=_FS_SEM)
        self.prog_sem_tex = ctx.program(vertex_shader=_VS_SEM_TEX, fragment_shader=_FS_SEM_TEX)
        self._fbos: Dict[Tuple[int, int, str], Any] = {}
        self._queries: List[Any] = []
        self.info = dict(ctx.info)
        self.culling = Culling()
        #: per colour pass: chunks in the scene / after the frustum / drawn; faces drawn
        self.stats: Dict[str, int] = {}

    # -------------------------------------------------------------- scenes
    def _scene_buffers(self, entry) -> Dict[str, Any]:
        gl = entry.gl
        mesh = entry.mesh
        cell = self.culling.layout(len(mesh.faces))
        if gl.get("ctx") is self.ctx and gl.get("cell") == cell:
            return gl
        if gl.get("ctx") is self.ctx:
            self._release_objects(gl)  # another chunk size
        gl.clear()
        gl["ctx"] = self.ctx
        gl["cell"] = cell
        # faces in spatial chunks, one piece per (chunk, texture) (-1: vertex colours)
        chunks = render_cull.Chunks(mesh.vertices, mesh.faces, mesh.face_texture, cell)
        ft = mesh.face_texture
        data = _expand(
            mesh,
            with_ids=False,
            faces=mesh.faces[chunks.order],
            textured=None if ft is None else ft[chunks.order] >= 0,
        )
        vbo = self.ctx.buffer(data.tobytes())
        fmt = (vbo, *_COLOR_FORMAT)
        gl["color"] = self.ctx.vertex_array(self.prog_color, [fmt], skip_errors=True)
        gl["color_tex"] = self.ctx.vertex_array(self.prog_color_tex, [fmt], skip_errors=True)
        # the depth pass reads the positions alone of the colour pass's buffer (_COLOR_FORMAT)
        gl["depth"] = self.ctx.vertex_array(self.prog_depth, [(vbo, "3f 20x", "in_pos")])
        gl["color_vbo"] = vbo
        gl["chunks"] = chunks
        nc = chunks.num_chunks
        gl["box_vbo"] = self.ctx.buffer(reserve=max(1, nc) * 8 * 12, dynamic=True)
        gl["box_ibo"] = self.ctx.buffer(render_cull.box_index_buffer(max(1, nc)).tobytes())
        gl["box"] = self.ctx.vertex_array(
            self.prog_depth,
            [(gl["box_vbo"], "3f", "in_pos")],
            index_buffer=gl["box_ibo"],
            index_element_size=4,
        )
        textures = []
        for img in mesh.textures:
            t = self.ctx.texture(
                (img.shape[1], img.shape[0]), 4, np.ascontiguousarray(img[::-1]).tobytes()
            )
            t.build_mipmaps()
            t.filter = (self.moderngl.LINEAR_MIPMAP_LINEAR, self.moderngl.LINEAR)
            t.repeat_x = t.repeat_y = True
            textures.append(t)
        gl["textures"] = textures
        sem = entry.semantic
        gl["sem"], gl["sem_tex"] = None, []
        if sem is not None and sem.ids is not None and len(sem.faces):
            ft = sem.face_texture if sem.id_textures else np.full(len(sem.faces), -1, np.int32)
            plain = sem.faces[ft < 0]
            if len(plain):
                svbo = self.ctx.buffer(_expand(sem, with_ids=True, faces=plain).tobytes())
                gl["sem"] = self.ctx.vertex_array(
                    self.prog_sem, [(svbo, "3f 1f", "in_pos", "in_id")]
                )
                gl["sem_vbo"] = svbo
            for ti, img in enumerate(sem.id_textures):
                faces = sem.faces[ft == ti]
                if not len(faces):
                    continue
                data = np.concatenate(
                    [sem.vertices[faces].reshape(-1, 3), sem.uv[faces].reshape(-1, 2)], 1
                )
                tvbo = self.ctx.buffer(np.ascontiguousarray(data, np.float32).tobytes())
                vao = self.ctx.vertex_array(self.prog_sem_tex, [(tvbo, "3f 2f", "in_pos", "in_uv")])
                tex = self.ctx.texture(
                    (img.shape[1], img.shape[0]),
                    1,
                    np.ascontiguousarray(img, np.float32).tobytes(),
                    dtype="f4",
                )
                tex.filter = (self.moderngl.NEAREST, self.moderngl.NEAREST)
                gl["sem_tex"].append((vao, tvbo, tex))
        return gl

    def release(self, entry) -> None:
        gl = entry.gl
        if gl.get("ctx") is not self.ctx:
            return
        with (
            self.lock,
            self.ctx,
        ):  # current again: habitat-sim in the process has its own EGL context
            self._release_objects(gl)

    @staticmethod
    def _release_objects(gl: Dict[str, Any]) -> None:
        parts = [o for trio in gl.get("sem_tex", []) for o in trio]
        keys = (
            "color",
            "color_tex",
            "depth",
            "box",
            "color_vbo",
            "box_vbo",
            "box_ibo",
            "sem",
            "sem_vbo",
        )
        for obj in [gl.get(k) for k in keys] + list(gl.get("textures", [])) + parts:
            if obj is not None:
                try:
                    obj.release()
                except Exception:  # noqa: BLE001
                    pass
        gl.clear()

    def _fbo(self, w: int, h: int, kind: str):
        key = (w, h, kind)
        fbo = self._fbos.get(key)
        if fbo is None:
            ctx = self.ctx
            depth = ctx.depth_renderbuffer((w, h))
            if (
                kind == "depth"
            ):  # the colour pass's depth buffer alone: occluders and occlusion tests
                fbo = ctx.framebuffer(
                    color_attachments=[], depth_attachment=self._fbo(w, h, "color").depth_attachment
                )
                self._fbos[key] = fbo
                return fbo
            if kind == "color":
                att = [
                    ctx.renderbuffer((w, h), 4, dtype="f1"),
                    ctx.renderbuffer((w, h), 1, dtype="f4"),
                ]
            else:
                att = [ctx.renderbuffer((w, h), 1, dtype="f4")]
            fbo = ctx.framebuffer(color_attachments=att, depth_attachment=depth)
            self._fbos[key] = fbo
        return fbo

    # -------------------------------------------------------------- colour pass
    def _query(self, i: int):
        while len(self._queries) <= i:
            self._queries.append(self.ctx.query(samples=True))
        return self._queries[i]

    def _draw_pieces(self, gl: Dict[str, Any], keep: Optional[np.ndarray], depth_only: bool) -> int:
        """Draw the pieces of the chunks in ``keep`` (None: all) in buffer order, runs of one
        texture merged into one draw call; returns the faces drawn."""
        ch: render_cull.Chunks = gl["chunks"]
        sel = (
            np.arange(len(ch.piece_chunk)) if keep is None else np.nonzero(keep[ch.piece_chunk])[0]
        )
        if not len(sel):
            return 0
        first, count = ch.piece_first[sel], ch.piece_count[sel]
        tex = ch.piece_tex[sel] if not depth_only else np.zeros(len(sel), np.int64)
        # a run starts where the texture changes or the buffer is not contiguous
        start = np.r_[True, (tex[1:] != tex[:-1]) | (first[1:] != first[:-1] + count[:-1])]
        runs = np.nonzero(start)[0]
        r_first = first[runs]
        r_count = np.add.reduceat(count, runs)
        if depth_only:
            vao = gl["depth"]
            for f, c in zip(r_first.tolist(), r_count.tolist()):
                vao.render(first=f, vertices=c)
            return int(r_count.sum()) // 3
        textures = gl["textures"]
        for t, f, c in zip(tex[runs].tolist(), r_first.tolist(), r_count.tolist()):
            if 0 <= t < len(textures):
                textures[t].use(0)
                gl["color_tex"].render(first=f, vertices=c)
            else:
                gl["color"].render(first=f, vertices=c)
        return int(r_count.sum()) // 3

    def _occlusion(
        self, gl: Dict[str, Any], dfbo, mvp_bytes: bytes, eye: np.ndarray, keep: np.ndarray
    ) -> np.ndarray:
        """``keep`` less the chunks whose padded boxes pass no sample against the depth of
        the nearer chunks, in rounds (``Culling.occlusion_rounds``); exact: see
        :mod:`.render_cull`."""
        ch: render_cull.Chunks = gl["chunks"]
        ctx = self.ctx
        dist = render_cull.box_distance(ch, eye)
        far_d = np.sqrt((np.maximum(np.abs(ch.lo - eye), np.abs(ch.hi - eye)) ** 2).sum(axis=1))
        pad = render_cull.box_padding(far_d, self.near)
        # a box the near plane may cut cannot be tested by drawing it: always kept
        inside = render_cull.camera_inside(ch, pad, eye, 6.0 * self.near)
        keep = keep.copy()
        drawn = np.zeros(len(keep), bool)  # already in the depth buffer
        self._occluder_faces = 0
        dfbo.use()
        dfbo.clear(depth=1.0)
        self.prog_depth["mvp"].write(mvp_bytes)
        # back faces culled in this pass only: occluders are any subset of the chunks'
        # triangles (fewer occluders hide less, never more), and a padded box seen from
        # outside is entered through its front faces
        ctx.front_face = "cw"  # the projection's y is flipped: see _draw_color
        ctx.cull_face = "back"
        ctx.enable(self.moderngl.CULL_FACE)
        offset = (0.0, self.prefill_units if self.culling.prefill else 0.0)
        boxes_written = False
        try:
            for radius in self.culling.occlusion_rounds:
                occ = keep & ~drawn & ((dist <= radius) | inside)
                if occ.any():
                    ctx.polygon_offset = offset  # the boxes are drawn without
                    self._occluder_faces += self._draw_pieces(gl, occ, depth_only=True)
                    ctx.polygon_offset = (0.0, 0.0)
                    drawn |= occ
                test = np.nonzero(keep & ~drawn & ~inside)[0]
                if not len(test) or not drawn.any():
                    continue
                if not boxes_written:
                    gl["box_vbo"].write(
                        render_cull.box_vertices(ch, np.arange(len(keep)), pad).tobytes()
                    )
                    boxes_written = True
                ctx.depth_func = "<="
                dfbo.depth_mask = False
                box = gl["box"]
                qs = [self._query(i) for i in range(len(test))]
                for q, c in zip(qs, test.tolist()):
                    with q:
                        box.render(first=36 * c, vertices=36)
                ctx.depth_func = "<"
                dfbo.depth_mask = True
                hidden = [c for q, c in zip(qs, test.tolist()) if q.samples == 0]
                keep[hidden] = False
        finally:
            ctx.polygon_offset = (0.0, 0.0)
            ctx.disable(self.moderngl.CULL_FACE)
            ctx.front_face = "ccw"
            ctx.depth_func = "<"
            dfbo.depth_mask = True
        return keep

    def _draw_color(
        self, gl: Dict[str, Any], fbo, dfbo, mvp: np.ndarray, view: np.ndarray, eye: np.ndarray
    ) -> None:
        ch: render_cull.Chunks = gl["chunks"]
        cull = self.culling
        mvp_bytes = mvp.T.astype("f4").tobytes()
        keep = np.ones(ch.num_chunks, bool)
        if cull.frustum:
            keep = render_cull.frustum_keep(ch, mvp)
        n_frustum = int(keep.sum())
        self._occluder_faces = 0
        prefilled = False
        if cull.occlusion and n_frustum >= cull.occlusion_min_chunks:
            keep = self._occlusion(gl, dfbo, mvp_bytes, eye, keep)
            prefilled = cull.prefill
        fbo.use()
        if prefilled:  # the colour attachments only: the depth holds the occluders'
            fbo.depth_mask = False
            fbo.clear(0.0, 0.0, 0.0, 0.0)
            fbo.depth_mask = True
            fbo.use()
        else:
            fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        if cull.backface:
            # the projection's y is flipped (rows read out top-down): a face wound
            # counter-clockwise seen from its front lands clockwise in the window
            self.ctx.front_face = "cw"
            self.ctx.cull_face = "back"
            self.ctx.enable(self.moderngl.CULL_FACE)
        view_bytes = view.T.astype("f4").tobytes()
        for prog in (self.prog_color, self.prog_color_tex):
            prog["mvp"].write(mvp_bytes)
            prog["view"].write(view_bytes)
        self.prog_color_tex["tex"].value = 0
        faces = self._draw_pieces(gl, None if keep.all() else keep, depth_only=False)
        if cull.backface:
            self.ctx.disable(self.moderngl.CULL_FACE)
            self.ctx.front_face = "ccw"
        self.stats = {
            "chunks": ch.num_chunks,
            "frustum": n_frustum,
            "drawn": int(keep.sum()),
            "faces": faces,
            "occluder faces": self._occluder_faces,
        }

    # -------------------------------------------------------------- render
    def render(
        self,
        entry,
        sensors: Sequence[CameraSpec],
        poses: Dict[str, tuple],
        only_object: Optional[int] = None,
    ) -> Dict[str, np.ndarray]:
        """Render every visual sensor; returns uuid -> raw image (rgb HxWx3 u8, depth HxW
        float32 metres, semantic HxW int32). ``only_object``: the semantic sensors draw
        that object alone, nothing in front of it (0 elsewhere)."""
        only = -1.0 if only_object is None else float(only_object)
        out: Dict[str, np.ndarray] = {}
        with (
            self.lock,
            self.ctx,
        ):  # current again: habitat-sim in the process has its own EGL context
            gl = self._scene_buffers(entry)
            ctx = self.ctx
            ctx.enable(self.moderngl.DEPTH_TEST)
            ctx.disable(self.moderngl.CULL_FACE)
            # sensors sharing a camera (the usual RGB + depth pair) share one pass
            groups: Dict[tuple, List[Any]] = {}
            for s in sensors:
                w, h = s.width, s.height
                pos, rot = poses[s.uuid]
                cam = "sem" if s.kind == "semantic" else "color"
                key = (cam, w, h, s.hfov, np.round(pos, 6).tobytes(), np.round(rot, 6).tobytes())
                groups.setdefault(key, []).append(s)
            for (cam, w, h, hfov, _, _), group in groups.items():
                pos, rot = poses[group[0].uuid]
                view = _view(np.asarray(pos, np.float64), np.asarray(rot, np.float64))
                proj = _perspective(hfov, w, h, self.near, self.far)
                proj[1] *= -1.0  # draw upside down so GL's bottom-up rows read out top-down
                mvp = proj @ view
                if cam == "sem":
                    if gl["sem"] is None and not gl["sem_tex"]:
                        for s in group:
                            out[s.uuid] = np.zeros((h, w), np.int32)
                        continue
                    fbo = self._fbo(w, h, "sem")
                    fbo.use()
                    fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
                    if gl["sem"] is not None:
                        self.prog_sem["mvp"].write(mvp.T.astype("f4").tobytes())
                        self.prog_sem["only"].value = only
                        gl["sem"].render()
                    if gl["sem_tex"]:
                        self.prog_sem_tex["mvp"].write(mvp.T.astype("f4").tobytes())
                        self.prog_sem_tex["only"].value = only
                        self.prog_sem_tex["ids"].value = 0
                        for vao, _, tex in gl["sem_tex"]:
                            tex.use(0)
                            vao.render()
                    ids = np.empty((h, w), np.float32)
                    fbo.read_into(ids, components=1, attachment=0, dtype="f4")
                    img = np.rint(ids).astype(np.int32)
                    for s in group:
                        out[s.uuid] = img
                    continue
                fbo = self._fbo(w, h, "color")
                eye = np.asarray(pos, np.float64)
                self._draw_color(gl, fbo, self._fbo(w, h, "depth"), mvp, view, eye)
                need_rgb = any(s.kind == "rgb" for s in group)
                need_depth = any(s.kind == "depth" for s in group)
                rgb = depth = None
                if need_rgb:
                    rgb = np.empty((h, w, 3), np.uint8)
                    fbo.read_into(rgb, components=3, attachment=0)
                if need_depth:
                    depth = np.empty((h, w), np.float32)
                    fbo.read_into(depth, components=1, attachment=1, dtype="f4")
                for s in group:
                    out[s.uuid] = rgb if s.kind == "rgb" else depth
        return out


_RENDERER: Optional[Renderer] = None
_RENDERER_ERR: Optional[str] = None
_LOCK = threading.Lock()


def get_renderer() -> Renderer:
    """The process-wide renderer; raises :class:`RenderError` (one line) without EGL."""
    global _RENDERER, _RENDERER_ERR
    with _LOCK:
        if _RENDERER is None:
            if _RENDERER_ERR is not None:
                raise RenderError(_RENDERER_ERR)
            try:
                _RENDERER = Renderer()
            except RenderError as exc:
                _RENDERER_ERR = str(exc)
                raise
        return _RENDERER


def egl_available() -> bool:
    try:
        get_renderer()
        return True
    except RenderError:
        return False


def release_scene(entry) -> None:
    if _RENDERER is not None:
        _RENDERER.release(entry)
