"""Policy selection on synthetic sweep tables whose best answer is known by construction; allocation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.adaptive.sim import (
    BEST,
    CANDIDATES,
    PER_BIN,
    RATES,
    synthetic_difficulty,
    synthetic_outcomes,
    synthetic_policy,
)
from ttscale.routing.difficulty import Features
from ttscale.routing.policy import LearnOptions, Outcome, Policy, learn_policy
from ttscale.routing.total_budget import Allocator, plan_budget


def learn(bins: str = "oracle", **kwargs: object) -> dict:
    return learn_policy(outcomes=synthetic_outcomes(), difficulty=synthetic_difficulty(**kwargs),  # type: ignore[arg-type]
                        options=LearnOptions(bins=bins), candidates=CANDIDATES)  # type: ignore[arg-type]


@pytest.mark.parametrize("bins", ["oracle", "predicted"])
def test_the_known_best_candidate_is_chosen_for_every_bin_and_budget(bins: str) -> None:
    policy = learn(bins)
    for b, best in BEST.items():
        for k, name in best.items():
            entry = policy["policy"][str(k)]
            assert entry["problems"] == PER_BIN
            rec = entry["budgets"][str(b)]
            assert rec["choice"]["candidate"] == name, (bins, b, k)
            assert rec["choice"]["strategy"] == "self_consistency"
            # The evidence: every candidate's accuracy in this bin, best first, as constructed.
            accuracy = {e["candidate"]: e["accuracy"]["value"] for e in rec["evidence"]}
            assert accuracy == {c: round(RATES[b][k][j] / PER_BIN, 4) for j, c in enumerate("ABC")}
            assert rec["evidence"][0]["candidate"] == name


def test_cross_validated_routing_beats_the_best_single_candidate_held_out() -> None:
    cv = learn("oracle")["cross_validation"]
    assert cv["folds"] == 2
    for b in ("256", "1024"):
        rec = cv["budgets"][b]
        # Held out, routing by bin keeps A on easy bins and B/C on hard ones: by construction it must win.
        assert rec["policy"]["value"] > rec["best_single_candidate"]["value"]
        low, high = rec["policy"]["ci95"]
        assert low <= rec["policy"]["value"] <= high and rec["policy"]["n"] == 5 * PER_BIN
        assert len(rec["choices_per_fold_by_bin"]) == 2


def test_predicted_bins_report_their_agreement_with_oracle_bins() -> None:
    clean = learn("predicted")["difficulty"]["predicted_vs_oracle_heldout"]
    noisy = learn("predicted", feature_noise=0.4, seed=3)["difficulty"]["predicted_vs_oracle_heldout"]
    assert clean["problems"] == 5 * PER_BIN
    assert clean["exact"] >= 0.9 and clean["spearman_score_vs_pass1"] > 0.9
    assert noisy["exact"] < clean["exact"]
    assert sum(map(sum, clean["confusion_oracle_rows_predicted_columns"])) == 5 * PER_BIN


def test_a_tie_goes_to_the_cheaper_candidate() -> None:
    rows = [Outcome(candidate=c, budget=100.0, problem=f"q{i}", correct=1.0, spent=s)
            for i in range(6) for c, s in (("dear", 90.0), ("cheap", 10.0))]
    diff = {f"q{i}": synthetic_difficulty()[f"p1-{i:02d}"] for i in range(6)}
    cands = {"dear": {"strategy": "best_of_n", "params": {}}, "cheap": {"strategy": "best_of_n", "params": {}}}
    policy = learn_policy(outcomes=rows, difficulty=diff, options=LearnOptions(bins="oracle", n_bins=2),
                          candidates=cands)
    assert {e["budgets"]["100"]["choice"]["candidate"] for e in policy["policy"].values()} == {"cheap"}


@pytest.mark.parametrize(("field", "value", "message"), [
    ("folds", 1, "folds must be ≥ 2, got 1"),
    ("n_bins", 0, "n_bins must be ≥ 1, got 0"),
    ("bins", "guessed", "bins must be oracle, predicted or verifier"),
])
def test_learn_options_are_validated(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LearnOptions(**{field: value})  # type: ignore[arg-type]


def test_the_policy_json_is_readable_and_reads_back(tmp_path: Path) -> None:
    path = synthetic_policy(tmp_path)
    data = json.loads(path.read_text())
    assert data["format"] == "ttscale.routing.policy/1" and data["difficulty"]["probe"]["n"] == 2
    policy = Policy.load(path)
    assert policy.budgets == [256.0, 1024.0]
    assert policy.choice(3, 1024.0) == ("self_consistency", {"max_tokens": "48"})  # C
    assert policy.bin_of(Features(agreement=0.95, entropy=0.05)) == 1
    assert policy.bin_of(Features(agreement=0.0, entropy=1.0)) == 5
    assert policy.row(700) == 256.0 and policy.row(5000) == 1024.0 and policy.row(100) is None
    curves = policy.curves()
    assert curves[1][0] == (0.0, 0.75) and curves[5] == [(0.0, 0.0), (256.0, 0.0), (1024.0, 0.0)]
    with pytest.raises(ValueError, match="oracle-bin policy"):
        Policy.load(synthetic_policy(tmp_path, bins="oracle")).bin_of(Features(agreement=1.0))
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a ttscale policy"):
        Policy.load(tmp_path / "bad.json")


CURVES = {1: [(0.0, 0.5), (256.0, 0.9), (1024.0, 0.9)], 3: [(0.0, 0.0), (256.0, 0.3), (1024.0, 0.7)],
          5: [(0.0, 0.0), (256.0, 0.0), (1024.0, 0.0)]}


def test_compute_that_buys_nothing_is_never_granted() -> None:
    plenty = {"others": {}, "available": 1e9, "cap": 1e9}
    assert plan_budget(curves=CURVES, this_bin=5, **plenty) == 0.0  # hopeless
    assert plan_budget(curves=CURVES, this_bin=1, **plenty) == 256.0  # easy: saturated at 256
    assert plan_budget(curves=CURVES, this_bin=3, **plenty) == 1024.0  # where compute pays
    assert plan_budget(curves=CURVES, this_bin=3, others={}, available=1e9, cap=600) == 256.0
    assert plan_budget(curves=CURVES, this_bin=3, others={}, available=300, cap=1e9) == 256.0


def test_a_tight_total_goes_where_the_marginal_gain_is_largest() -> None:
    # 1 easy problem to come, this one hard, room for 1024 + 256: hard gets 1024 (0.4 gain/768 tokens
    # beats easy's 0 gain beyond 256); with room for only 512, both get 256.
    assert plan_budget(curves=CURVES, this_bin=3, others={1: 1.0}, available=1280, cap=1e9) == 1024.0
    assert plan_budget(curves=CURVES, this_bin=3, others={1: 1.0}, available=512, cap=1e9) == 256.0


@settings(max_examples=200, deadline=None)
@given(bins=st.lists(st.sampled_from([1, 3, 5]), min_size=1, max_size=30), total=st.integers(0, 40_000),
       probe=st.integers(0, 200))
def test_the_allocator_never_promises_more_than_the_total(bins: list[int], total: int, probe: int) -> None:
    alloc = Allocator(curves=CURVES, prior={1: 0.3, 3: 0.4, 5: 0.3}, problems=len(bins), available=total,
                      probe_reserve=probe)
    probes = grants = 0.0
    for k in bins:
        spent = probe // 2
        probes += spent
        grants += alloc.grant(k=k, probe_spent=spent, cap=1e9)
        assert probes + grants <= max(total, len(bins) * probe) + 1e-9
    if total >= len(bins) * probe:
        assert probes + grants <= total


def test_compute_moves_from_easy_and_hopeless_to_hard_problems() -> None:
    bins = [1, 5, 3] * 10
    alloc = Allocator(curves=CURVES, prior={1: 1 / 3, 3: 1 / 3, 5: 1 / 3}, problems=30, available=30 * 600,
                      probe_reserve=0)
    grants = [alloc.grant(k=k, probe_spent=0, cap=1e9) for k in bins]
    by_bin = {k: [g for g, kk in zip(grants, bins, strict=True) if kk == k] for k in (1, 3, 5)}
    assert set(by_bin[5]) == {0.0} and set(by_bin[1]) <= {0.0, 256.0}
    assert sum(by_bin[3]) / 10 > 600  # more than the even share of 600
    assert sum(grants) <= 30 * 600
