"""Oracle bins, probe features and the difficulty predictor (pure: no engine)."""

from __future__ import annotations

import math

import pytest

from ttscale.routing.difficulty import (
    Features,
    Predictor,
    ProbeSettings,
    agreement_report,
    assign_bins,
    features_of,
    matched_thresholds,
    quantile_thresholds,
)


def test_quantile_bins_put_ties_in_the_harder_bin_and_never_solved_problems_last() -> None:
    pass1 = [0.0] * 4 + [0.1, 0.2, 0.4, 0.6, 0.8, 1.0]
    thresholds = quantile_thresholds(pass1, bins=5)
    assert thresholds == sorted(thresholds, reverse=True)
    bins = assign_bins(pass1, thresholds)
    assert bins[:4] == [5, 5, 5, 5]  # 40% never solved: all in the hopeless bin, bin 4 empty
    assert bins[-1] == 1 and bins == sorted(bins, reverse=True)
    assert 4 not in bins


def test_five_distinct_levels_fill_five_bins() -> None:
    pass1 = [x / 20 for x in range(20)]
    bins = assign_bins(pass1, quantile_thresholds(pass1, bins=5))
    assert [bins.count(k) for k in range(1, 6)] == [4, 4, 4, 4, 4]


def test_matched_thresholds_give_predicted_bins_the_oracle_proportions() -> None:
    oracle = [1] * 3 + [2] * 0 + [3] * 5 + [5] * 2
    scores = [0.9, 0.8, 0.85, 0.5, 0.4, 0.45, 0.6, 0.55, 0.1, 0.05]
    bins = assign_bins(scores, matched_thresholds(scores, oracle, bins=5))
    assert sorted(bins) == sorted(oracle)


def test_features_of_a_probe() -> None:
    f = features_of(answers=["7", "7", "8", None], verifier_scores=[1.0, 0.5, 0.0, 0.5],
                    mean_logprobs=[-0.5, -1.5, None, -1.0])
    assert f.agreement == 0.5  # two of four samples state the modal answer
    assert f.verifier_mean == 0.5 and math.isclose(f.entropy or 0, 1.0)
    none = features_of(answers=[None, None], verifier_scores=None, mean_logprobs=[None, None])
    assert none == Features(agreement=0.0, verifier_mean=None, entropy=None)
    with pytest.raises(ValueError, match="unknown feature"):
        f.get("vibes")


def test_the_predictor_ranks_problems_by_their_features_and_round_trips() -> None:
    truth = [i / 29 for i in range(30)]
    feats = [Features(agreement=t, entropy=2 - 2 * t) for t in truth]
    oracle = assign_bins(truth, quantile_thresholds(truth, bins=5))
    predictor = Predictor.fit(feats, truth, oracle, bins=5)
    assert predictor.features == ("agreement", "entropy")
    assert [predictor.bin(f) for f in feats] == oracle
    assert Predictor.from_dict(predictor.to_dict()) == predictor
    # A live probe that could not measure entropy is scored as if at the training mean.
    half = predictor.score(Features(agreement=1.0))
    w, m, sd = predictor.coef[0], predictor.mean[0], predictor.scale[0]
    assert half == pytest.approx(predictor.intercept + w * (1.0 - m) / sd)
    assert predictor.score(Features(agreement=0.5)) < half < predictor.score(Features(agreement=1.0, entropy=0.0))


def test_agreement_report() -> None:
    report = agreement_report([1, 2, 3, 5], [1, 3, 3, 4], bins=5, scores=[0.9, 0.6, 0.5, 0.0],
                              pass1=[0.8, 0.5, 0.4, 0.1])
    assert report["exact"] == 0.5 and report["within_one"] == 1.0
    assert report["confusion_oracle_rows_predicted_columns"][2][1] == 1  # oracle 3 predicted 2
    assert report["spearman_score_vs_pass1"] == pytest.approx(1.0)


def test_probe_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="n must be ≥ 1, got 0"):
        ProbeSettings(n=0)
    with pytest.raises(KeyError, match="unknown verifier"):
        ProbeSettings(verifier="telepathy")
