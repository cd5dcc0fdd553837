"""Compute-optimal policies: per difficulty bin and budget, the best (strategy, hyper-parameters).

Snell et al., arXiv:2408.03314 (2024), §3.2 and §5: choose, for each difficulty bin and budget, the
strategy configuration with the best accuracy on sweep data, with cross-validation — the choice is made
on training folds and scored on the held-out fold, so the reported accuracy is not the selection's own.

Symbols: c a candidate (strategy + hyper-parameters), b a budget (the strategy's budget, probe excluded),
k a bin; acc(c, b, k) the mean correctness of c at b over the problems of bin k; the policy
π(k, b) = argmax_c acc(c, b, k), ties to the cheaper mean spend, then to the name. For a total budget T
over P problems the allocation maximizes Σ_i acc_{k_i}(b_i) subject to Σ_i b_i ≤ T (a multiple-choice
knapsack), solved by its Lagrangian: each bin takes argmax_b acc_k(b) − λ·b, with the smallest λ ≥ 0 whose
expected spend fits; b = 0 is "answer with the probe's majority" (acc_k(0) measured on the same data).
Bins: oracle (p̂₁), predicted (a fit of p̂₁ on probe features) or verifier (the probe's mean verifier score);
the held-out policy is compared with a fixed baseline in tokens at equal accuracy (P4, ttscale.routing.savings).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ttscale.kit.params import check_positive
from ttscale.routing.difficulty import (
    Features,
    Predictor,
    ProbeSettings,
    agreement_report,
    assign_bins,
    assign_equal,
    equal_cuts,
    tie_breaker,
)
from ttscale.routing.savings import tokens_saved
from ttscale.stats.metrics import bootstrap_mean

FORMAT = "ttscale.routing.policy/1"


def candidate_key(strategy: str, params: Mapping[str, Any]) -> str:
    """`strategy k=v k=v` (parameters sorted): how a candidate is named in tables and JSON."""
    return " ".join([strategy, *(f"{k}={params[k]}" for k in sorted(params))])


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """One cell of a sweep table: a candidate at a budget on one problem (seeds averaged)."""

    candidate: str
    """`candidate_key(strategy, params)`."""
    budget: float
    """The strategy's budget, in the budget's unit."""
    problem: str
    """The problem id."""
    correct: float
    """Mean correctness over seeds (0 or 1 with one seed)."""
    spent: float
    """Mean budget spent (the ledger's `spent`)."""


@dataclass(frozen=True, kw_only=True)
class Difficulty:
    """What the sweep says about one problem's difficulty."""

    pass1: float
    """p̂₁: the fraction of its stored i.i.d. samples that are correct (sweeps.holdout: apart from the probe's)."""
    features: Features | None = None
    """Probe features (predicted and verifier bins need them)."""
    probe_correct: float | None = None
    """Whether the probe's majority answer is right (the accuracy of spending nothing after the probe)."""
    probe_spent: float | None = None
    """Tokens the probe generated: what routing costs on top of the chosen strategy (None = unknown, taken as 0)."""


@dataclass(frozen=True, kw_only=True)
class LearnOptions:
    """How a policy is learned from a sweep table."""

    bins: Literal["oracle", "predicted", "verifier"] = "predicted"
    """oracle: bins of the true p̂₁ (an upper bound; needs the truth); predicted: bins of a fit of p̂₁ on the probe's
    features; verifier: equal bins of the probe samples' mean verifier score (Snell's predicted difficulty)."""
    n_bins: int = 5
    """Difficulty bins (Snell et al. use 5)."""
    folds: int = 2
    """Cross-validation folds (Snell et al. use 2)."""
    seed: int = 0
    """Seed of the fold assignment and of the tie-breakers that make equal bins equal."""
    resamples: int = 2000
    """Bootstrap resamples of the confidence intervals."""

    def __post_init__(self) -> None:
        if self.bins not in ("oracle", "predicted", "verifier"):
            raise ValueError(f"bins must be oracle, predicted or verifier, got {self.bins!r}")
        check_positive("n_bins", self.n_bins)
        if not isinstance(self.folds, int) or self.folds < 2:
            raise ValueError(f"folds must be ≥ 2, got {self.folds!r}")
        if self.resamples < 100:
            raise ValueError(f"resamples must be ≥ 100, got {self.resamples}")


class _Table:
    """Dense arrays per budget: correctness and spend of every candidate on every problem."""

    def __init__(self, outcomes: Sequence[Outcome], problems: Sequence[str]) -> None:
        self.problems = list(problems)
        index = {p: i for i, p in enumerate(self.problems)}
        cells: dict[tuple[float, str], dict[int, Outcome]] = {}
        for o in outcomes:
            if o.problem in index:
                cells.setdefault((o.budget, o.candidate), {})[index[o.problem]] = o
        self.budgets = sorted({b for b, _ in cells})
        self.candidates: dict[float, list[str]] = {}
        self.correct: dict[float, np.ndarray] = {}
        self.spent: dict[float, np.ndarray] = {}
        for b in self.budgets:
            # Only candidates measured on every problem compete: a partial cell would be compared on other problems.
            names = sorted(c for (bb, c), row in cells.items() if bb == b and len(row) == len(self.problems))
            self.candidates[b] = names
            self.correct[b] = np.asarray([[cells[b, c][i].correct for i in range(len(self.problems))] for c in names])
            self.spent[b] = np.asarray([[cells[b, c][i].spent for i in range(len(self.problems))] for c in names])

    def best(self, b: float, rows: np.ndarray) -> int:
        """The candidate with the best mean accuracy on `rows`; ties to the cheaper, then to the name."""
        acc = self.correct[b][:, rows].mean(axis=1)
        cost = self.spent[b][:, rows].mean(axis=1)
        return min(range(len(acc)), key=lambda c: (-acc[c], cost[c], self.candidates[b][c]))


class _Binner:
    """Bins fitted on some problems and applied to any: equal bins of p̂₁ (oracle) or of the probe's mean
    verifier score (verifier), or a predictor of p̂₁ (predicted); `ties` are the problems' tie-breakers."""

    def __init__(self, rows: np.ndarray, pass1: np.ndarray, features: Sequence[Features | None],
                 ties: np.ndarray, options: LearnOptions) -> None:
        self.cuts = equal_cuts(pass1[rows].tolist(), ties[rows].tolist(), bins=options.n_bins)
        self.predictor: Predictor | None = None
        self.verifier_cuts: list[tuple[float, float]] | None = None
        if options.bins != "oracle" and any(features[i] is None for i in rows):
            raise ValueError(f"{options.bins} bins need probe features for every problem")
        if options.bins == "predicted":
            oracle = assign_equal(pass1[rows].tolist(), ties[rows].tolist(), self.cuts)
            train = [features[i] for i in rows]
            self.predictor = Predictor.fit([f for f in train if f is not None], pass1[rows], oracle,
                                           bins=options.n_bins)
        elif options.bins == "verifier":
            self.verifier_cuts = equal_cuts([_verifier_mean(features[i]) for i in rows], ties[rows].tolist(),
                                            bins=options.n_bins)
        self.pass1, self.features, self.ties = pass1, features, ties

    def oracle(self, i: int) -> int:
        return assign_equal([float(self.pass1[i])], [float(self.ties[i])], self.cuts)[0]

    def __call__(self, i: int) -> int:
        f = self.features[i]
        if self.verifier_cuts is not None:
            return assign_equal([_verifier_mean(f)], [float(self.ties[i])], self.verifier_cuts)[0]
        if self.predictor is None:
            return self.oracle(i)
        assert f is not None
        return self.predictor.bin(f)


def _verifier_mean(features: Features | None) -> float:
    if features is None or features.verifier_mean is None:
        raise ValueError("verifier bins need the probe's mean verifier score: learn with a probe verifier "
                         "(--probe-verifier arithmetic), not none")
    return float(features.verifier_mean)


def learn_policy(
    *, outcomes: Sequence[Outcome], difficulty: Mapping[str, Difficulty], options: LearnOptions,
    candidates: Mapping[str, Mapping[str, Any]], probe: ProbeSettings | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The policy as a JSON-ready dict: per bin and budget the choice and the evidence, plus held-out accuracy.

    `candidates` maps each candidate key to `{"strategy": name, "params": {...}}` (what the choice runs).
    """
    measured = {o.problem for o in outcomes}
    problems = sorted(p for p in difficulty if p in measured)
    if len(problems) < options.folds:
        raise ValueError(f"need at least {options.folds} problems with sweep outcomes, got {len(problems)}")
    table = _Table(outcomes, problems)
    if not any(table.candidates[b] for b in table.budgets):
        raise ValueError("no candidate was measured on every problem at any budget")
    pass1 = np.asarray([difficulty[p].pass1 for p in problems], dtype=float)
    feats = [difficulty[p].features for p in problems]
    ties = np.asarray([tie_breaker(p, seed=options.seed) for p in problems])
    everyone = np.arange(len(problems))
    folds = _folds(assign_equal(pass1.tolist(), ties.tolist(),
                                equal_cuts(pass1.tolist(), ties.tolist(), bins=options.n_bins)), options)
    cv, held = _cross_validate(table, pass1, feats, ties, folds, options)
    probe_spent = np.asarray([difficulty[p].probe_spent or 0.0 for p in problems], dtype=float)
    cv["tokens_saved"] = tokens_saved(table, held, probe_spent if options.bins != "oracle" else 0 * probe_spent,
                                      candidates=candidates, resamples=options.resamples, seed=options.seed)
    final = _Binner(everyone, pass1, feats, ties, options)
    bins = np.asarray([final(int(i)) for i in everyone])
    probe_ok = np.asarray([difficulty[p].probe_correct or 0.0 for p in problems], dtype=float)
    per_bin: dict[str, Any] = {}
    for k in range(1, options.n_bins + 1):
        rows = everyone[bins == k]
        entry: dict[str, Any] = {"problems": int(rows.size), "probe_only_accuracy":
                                 float(probe_ok[rows].mean()) if rows.size else None, "budgets": {}}
        for b in table.budgets:
            if table.candidates[b]:
                entry["budgets"][_fmt(b)] = _evidence(table, b, rows if rows.size else everyone, options,
                                                      candidates, fallback=not rows.size)
        per_bin[str(k)] = entry
    return {
        "format": FORMAT,
        "bins": options.bins,
        "n_bins": options.n_bins,
        "budget_unit": "tokens",
        "budgets": [_fmt(b) for b in table.budgets if table.candidates[b]],
        **dict(meta or {}),
        "difficulty": {
            # Equal bins: cut j is (value, tie-breaker) of bin j's last training problem (ttscale.routing.difficulty).
            "oracle_thresholds_pass1": [t for t, _ in final.cuts],
            "oracle_cuts": [list(c) for c in final.cuts],
            "verifier_cuts": [list(c) for c in final.verifier_cuts] if final.verifier_cuts else None,
            "tie_seed": options.seed,
            "bin_shares": {str(k): float((bins == k).mean()) for k in range(1, options.n_bins + 1)},
            "probe": probe.to_dict() if probe else None,
            "predictor": final.predictor.to_dict() if final.predictor else None,
            "predicted_vs_oracle_heldout": cv.pop("agreement", None),
        },
        "policy": per_bin,
        "cross_validation": cv,
    }


def _folds(strata: Sequence[int], options: LearnOptions) -> np.ndarray:
    """Fold of each problem: shuffled within each oracle bin and dealt round-robin, so folds share the mix."""
    rng = np.random.default_rng(options.seed)
    fold = np.empty(len(strata), dtype=int)
    order = sorted(range(len(strata)), key=lambda i: (strata[i], rng.random()))
    for rank, i in enumerate(order):
        fold[i] = rank % options.folds
    return fold


def _cross_validate(table: _Table, pass1: np.ndarray, feats: Sequence[Features | None], ties: np.ndarray,
                    folds: np.ndarray, options: LearnOptions) -> tuple[dict[str, Any], dict[float, np.ndarray]]:
    """Held-out accuracy of the whole procedure (bins, predictor, choice all refit on each training fold)."""
    n = len(table.problems)
    budgets = [b for b in table.budgets if table.candidates[b]]
    policy = {b: np.zeros(n) for b in budgets}
    single = {b: np.zeros(n) for b in budgets}
    spent = {b: np.zeros(n) for b in budgets}
    predicted, oracle, scores = np.zeros(n, dtype=int), np.zeros(n, dtype=int), np.zeros(n)
    chosen: dict[float, list[list[str]]] = {b: [] for b in budgets}
    for f in range(options.folds):
        train, test = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        binner = _Binner(train, pass1, feats, ties, options)
        train_bins = np.asarray([binner(i) for i in train])
        for i in test:
            predicted[i], oracle[i] = binner(i), binner.oracle(i)
            if binner.predictor is not None:
                f_i = feats[i]
                assert f_i is not None
                scores[i] = binner.predictor.score(f_i)
        for b in budgets:
            overall = table.best(b, train)
            picks = {k: table.best(b, train[train_bins == k]) if (train_bins == k).any() else overall
                     for k in range(1, options.n_bins + 1)}
            chosen[b].append([table.candidates[b][picks[k]] for k in range(1, options.n_bins + 1)])
            for i in test:
                c = picks[int(predicted[i])]
                policy[b][i], spent[b][i] = table.correct[b][c, i], table.spent[b][c, i]
                single[b][i] = table.correct[b][overall, i]
    out: dict[str, Any] = {
        "folds": options.folds,
        "seed": options.seed,
        "note": "held-out accuracy: every problem scored by choices fitted on the other folds",
        "budgets": {
            _fmt(b): {
                "policy": _estimate(policy[b], options),
                "best_single_candidate": _estimate(single[b], options),
                "policy_mean_spent": float(spent[b].mean()),
                "choices_per_fold_by_bin": chosen[b],
            }
            for b in budgets
        },
    }
    if options.bins != "oracle":
        out["agreement"] = agreement_report(predicted.tolist(), oracle.tolist(), bins=options.n_bins,
                                            scores=scores.tolist() if options.bins == "predicted" else None,
                                            pass1=pass1.tolist())
    # Held-out (correct, spent) of every problem under the policy, per budget: what tokens_saved compares.
    return out, {b: np.stack([policy[b], spent[b]]) for b in budgets}


def _evidence(table: _Table, b: float, rows: np.ndarray, options: LearnOptions,
              candidates: Mapping[str, Mapping[str, Any]], *, fallback: bool) -> dict[str, Any]:
    best = table.best(b, rows)
    name = table.candidates[b][best]
    evidence: list[dict[str, Any]] = [
        {"candidate": c, "accuracy": _estimate(table.correct[b][j, rows], options),
         "mean_spent": float(table.spent[b][j, rows].mean())}
        for j, c in enumerate(table.candidates[b])
    ]
    evidence.sort(key=lambda e: (-e["accuracy"]["value"], e["mean_spent"], e["candidate"]))
    return {
        "choice": {"candidate": name, **dict(candidates[name])},
        "accuracy": float(table.correct[b][best, rows].mean()),
        "mean_spent": float(table.spent[b][best, rows].mean()),
        # An empty bin gets the choice over all problems (a problem may still be predicted into it).
        "chosen_over_all_problems": fallback,
        "evidence": evidence,
    }


def _estimate(values: np.ndarray, options: LearnOptions) -> dict[str, Any]:
    est = bootstrap_mean(list(map(float, values)), resamples=options.resamples, seed=options.seed)
    return {"value": round(est.value, 4), "ci95": [round(est.low, 4), round(est.high, 4)], "n": est.n}


def _fmt(b: float) -> str:
    return str(int(b)) if float(b).is_integer() else f"{b:g}"


# -- using a policy -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """A learned policy, read back from its JSON (see `learn_policy` for the layout)."""

    data: dict[str, Any]
    """The JSON document, as written by `ttscale policy`."""

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"policy file {str(path)!r} does not exist") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read policy {str(path)!r}: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{str(path)!r} is not a ttscale policy (format {FORMAT}); make one with `ttscale policy`")
        return cls(data)

    @property
    def n_bins(self) -> int:
        return int(self.data["n_bins"])

    @property
    def budgets(self) -> list[float]:
        return sorted(float(b) for b in self.data["budgets"])

    @property
    def probe(self) -> ProbeSettings:
        settings = self.data["difficulty"].get("probe")
        if not settings:
            raise ValueError("the policy has no probe settings: learn it from a sweep with a sample-pool strategy")
        return ProbeSettings(**settings)

    def bin_of(self, features: Features, *, problem_id: str = "") -> int:
        """The bin of a probed problem (a policy learned with oracle bins cannot be used live); verifier bins
        break a tie at a cut by the problem's tie-breaker, as in training."""
        if self.data["bins"] == "verifier":
            if features.verifier_mean is None:
                raise ValueError("a verifier-bin policy needs the probe's mean verifier score; the probe had none")
            return self._equal_bin("verifier_cuts", features.verifier_mean, problem_id)
        if self.data["bins"] != "predicted":
            raise ValueError("an oracle-bin policy needs each problem's true pass@1; learn one with --bins predicted "
                             "or --bins verifier")
        return Predictor.from_dict(self.data["difficulty"]["predictor"]).bin(features)

    def bin_of_pass1(self, pass1: float, *, problem_id: str = "") -> int:
        """The oracle bin of a problem whose p̂₁ is known (offline evaluation); a policy from before equal
        bins (no `oracle_cuts`) puts ties into the harder bin."""
        if self.data["difficulty"].get("oracle_cuts"):
            return self._equal_bin("oracle_cuts", pass1, problem_id)
        return assign_bins([pass1], self.data["difficulty"]["oracle_thresholds_pass1"])[0]

    def _equal_bin(self, key: str, value: float, problem_id: str) -> int:
        difficulty = self.data["difficulty"]
        tie = tie_breaker(problem_id, seed=int(difficulty.get("tie_seed", 0)))
        return assign_equal([value], [tie], difficulty[key])[0]

    def row(self, remaining: float) -> float | None:
        """The largest policy budget that fits in `remaining`; None when none does."""
        fitting = [b for b in self.budgets if b <= remaining]
        return max(fitting) if fitting else None

    def choice(self, k: int, budget: float) -> tuple[str, dict[str, Any]]:
        """(strategy, params) that the policy runs for bin k at `budget` (one of `budgets`)."""
        chosen = self.data["policy"][str(k)]["budgets"][_fmt(budget)]["choice"]
        return str(chosen["strategy"]), dict(chosen["params"])

    def curves(self) -> dict[int, list[tuple[float, float]]]:
        """acc_k(b) per bin, b = 0 being the probe's own answer: what the total-budget allocation trades."""
        out: dict[int, list[tuple[float, float]]] = {}
        for k in range(1, self.n_bins + 1):
            entry = self.data["policy"][str(k)]
            points = [(0.0, float(entry.get("probe_only_accuracy") or 0.0))]
            for b in self.budgets:
                rec = entry["budgets"].get(_fmt(b))
                if rec is not None:
                    points.append((b, float(rec["accuracy"])))
            out[k] = points
        return out

    def prior(self) -> dict[int, float]:
        shares = self.data["difficulty"]["bin_shares"]
        return {int(k): float(v) for k, v in shares.items()}
