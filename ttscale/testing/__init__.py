"""Simulators for testing and benchmarking without a model: named as such, never a stand-in for vLLM in a claim.

- `SimulatedArithmeticPolicy` and `make_context` (`ttscale.testing.policy`): a scripted, seeded arithmetic
  policy behind the AsyncEngine protocol, so a strategy's logic (tree shapes, budgets, selection) is tested in
  milliseconds — the way plugin authors test a new strategy before it meets an engine.
- `SimulatedCodePolicy` (`ttscale.testing.code_policy`): a scripted, seeded code writer over a code task's
  problems (right or wrong solutions, right or wrong tests), for code strategies' selection logic.
- `LatencyEngine` and `LatencyModel` (`ttscale.testing.latency`): the AsyncEngine protocol timed by a cost model
  (zero-cost for the harness's ceiling, or the rates of a GPU engine), over a script drawn once
  (`ttscale.testing.script`); with DeepConf's token confidences and requests stopped mid-stream.
- `SimulatedGenRM` and `ScriptedGenerator` (`ttscale.testing.allocsearch`): a deterministic accuracy surface over
  GenRM's S × V with a known optimum under the budget, and a scripted LLM, for allocation searches
  (`ttscale.allocsearch`).
"""

from ttscale.testing.allocsearch import ScriptedGenerator, SimulatedGenRM
from ttscale.testing.code_policy import SimulatedCodePolicy
from ttscale.testing.latency import LatencyConfig, LatencyEngine, LatencyModel
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context

__all__ = [
    "LatencyConfig", "LatencyEngine", "LatencyModel", "ScriptedGenerator", "SimulatedArithmeticPolicy",
    "SimulatedCodePolicy", "SimulatedGenRM", "make_context",
]
