"""Bayesian search over allocations: optuna's TPE, one of AgentTTS's baselines.

AgentTTS (2025) compares its LLM agent with Bayesian optimisation among other searches. Here it is optuna's
tree-structured Parzen estimator (`optuna.samplers.TPESampler`) with one categorical parameter per dimension,
maximising accuracy. optuna is imported when a proposal is made, never by `import ttscale`.

Each call rebuilds the study from the history it is given (`optuna.trial.create_trial` + `study.add_trial`,
one complete trial per evaluated allocation, value = accuracy) under a sampler seeded by (seed, number of
trials). A proposal is thus a function of the seed and the history alone: a search resumed from a log
proposes what the uninterrupted one would have, on the same optuna version (TPE's draws are optuna's to
change between versions). TPE is multivariate (`multivariate=True`: one joint density over the dimensions,
since the budget couples them). TPE knows nothing of the budget or of what was tried: an ask that is over
budget or already tried is told PRUNED and asked again. TPE ranks pruned trials with the worst, so within the
call it moves away from infeasible regions and from tried points (the tried point's real value stays in the
study as its complete trial); told FAIL instead, a duplicate is ignored and TPE asks the same favourite again
(optuna 5.0.0, the simulated GenRM space, 20 seeds × 26 trials: 305 random fallbacks with FAIL and univariate
TPE, none with PRUNED and multivariate). After `attempts` rejected asks the proposal is a seeded random unseen point
(`fallback=True`). What the rejected asks taught TPE is not carried to the next call: only evaluated trials
are history.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ttscale.allocsearch.proposers import Proposal, SpaceExhausted, check_seed, derived_seed, random_unseen, seen_keys
from ttscale.allocsearch.space import Space
from ttscale.allocsearch.trials import Trial
from ttscale.kit.params import check_positive


@dataclass(frozen=True, kw_only=True)
class BayesianProposer:
    """optuna TPE over one categorical parameter per dimension, rebuilt from the history on each call."""

    seed: int
    """Proposal k uses a TPE sampler seeded by (seed, k) and, when it falls back, a generator seeded likewise."""
    startup_trials: int = 10
    """Trials TPE draws at random before modelling (optuna's `n_startup_trials`, its default 10)."""
    attempts: int = 64
    """Asks per proposal before the seeded random fallback (an ask over budget or already tried is rejected)."""
    name: str = "bayesian"
    """Its name in trials and logs."""

    def __post_init__(self) -> None:
        check_seed(self.seed)
        if isinstance(self.startup_trials, bool) or not isinstance(self.startup_trials, int) \
                or self.startup_trials < 0:
            raise ValueError(f"startup_trials must be an int ≥ 0, got {self.startup_trials!r}")
        check_positive("attempts", self.attempts)

    async def propose(self, space: Space, history: Sequence[Trial]) -> Proposal:
        seen = seen_keys(space, history)
        if len(seen) >= len(space.points()):
            raise SpaceExhausted(f"every one of the {len(space.points())} feasible allocations was tried")
        optuna = _optuna()
        from optuna.distributions import CategoricalDistribution
        from optuna.trial import TrialState, create_trial

        distributions: dict[str, Any] = {d.name: CategoricalDistribution(d.values) for d in space.dimensions}
        sampler = optuna.samplers.TPESampler(seed=derived_seed(self.seed, "bayesian", len(history)),
                                             n_startup_trials=self.startup_trials, multivariate=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # optuna's experimental-feature warnings, once per call otherwise
            study = optuna.create_study(direction="maximize", sampler=sampler)
            for trial in history:
                study.add_trial(create_trial(params=space.canonical(trial.allocation), distributions=distributions,
                                             value=trial.accuracy))
            for rejected in range(self.attempts):
                ask = study.ask(distributions)
                allocation = dict(ask.params)
                if space.check(allocation) is None and space.key(allocation) not in seen:
                    return Proposal(allocation=space.canonical(allocation), invalid=rejected)
                study.tell(ask, state=TrialState.PRUNED)
        point = random_unseen(space, history, seed=self.seed, salt="bayesian-fallback")
        return Proposal(allocation=point, invalid=self.attempts, fallback=True,
                        reasoning=f"TPE's {self.attempts} asks were all over budget or already tried")


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ImportError("the Bayesian proposer needs optuna: pip install 'ttscale[allocate]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # one line per trial otherwise
    return optuna


__all__ = ["BayesianProposer"]
