"""Allocation search: the model and budget of each stage of a task, chosen in few trials (AgentTTS, 2025).

AgentTTS (2025, "AgentTTS: Large Language Model Agent for Test-time Compute-optimal Scaling Strategy in
Complex Tasks"): for multi-stage tasks the choice of model and budget per stage is a combinatorial search too
expensive to brute-force; an LLM agent that proposes allocations from the feedback of earlier trials finds
compute-optimal ones in fewer trials than grid, random or Bayesian search.

- `space`: `Dimension`, `Space` (allowed values, a cost, a total budget; feasible points in grid order);
- `trials`: `Evaluation` (what an evaluator returns), `Trial`, `TrialLog` (a resumable directory);
- `proposers`: the `Proposer` protocol, `GridProposer`, `RandomProposer`; `bayesian`: `BayesianProposer`
  (optuna TPE, imported only when it proposes); `agenttts`: `AgentTTSProposer` (the reference's loop: a
  rule-based start, insights, batches of candidates); `agent`: `AgentProposer` (one allocation per call),
  `json_schema`;
- `search`: `search_allocation`, `compare_proposers`.

The package is named `allocsearch`, not `allocate`: `ttscale.allocate` is a function.
"""

from ttscale.allocsearch.agent import AgentProposer, json_schema
from ttscale.allocsearch.agenttts import AgentTTSProposer
from ttscale.allocsearch.bayesian import BayesianProposer
from ttscale.allocsearch.proposers import GridProposer, Proposal, Proposer, RandomProposer, SpaceExhausted
from ttscale.allocsearch.search import ProposerRow, ProposerTable, SearchResult, compare_proposers, search_allocation
from ttscale.allocsearch.space import Allocation, Dimension, Space, Value
from ttscale.allocsearch.trials import Evaluation, Evaluator, Trial, TrialLog

__all__ = [
    "AgentProposer",
    "AgentTTSProposer",
    "Allocation",
    "BayesianProposer",
    "Dimension",
    "Evaluation",
    "Evaluator",
    "GridProposer",
    "Proposal",
    "Proposer",
    "ProposerRow",
    "ProposerTable",
    "RandomProposer",
    "SearchResult",
    "Space",
    "SpaceExhausted",
    "Trial",
    "TrialLog",
    "Value",
    "compare_proposers",
    "json_schema",
    "search_allocation",
]
