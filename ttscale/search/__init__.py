"""Shared plumbing of the step-level tree searches: steps, the tree with unique-KV accounting,
score aggregation, softmax allocation, and the `Search` object strategies call.

Strategies in `ttscale.strategies` import from here; nothing here imports a strategy.
"""

from ttscale.search.score import aggregate, allocate, logit, resample, softmax
from ttscale.search.search import Search, SearchParams, Select
from ttscale.search.steps import split_steps, step_end
from ttscale.search.tree import LivePrefixes, Node, Tree

__all__ = [
    "LivePrefixes",
    "Node",
    "Search",
    "SearchParams",
    "Select",
    "Tree",
    "aggregate",
    "allocate",
    "logit",
    "resample",
    "softmax",
    "split_steps",
    "step_end",
]
