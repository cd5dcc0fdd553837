"""ttscale: test-time compute scaling for LLMs, budget-matched by construction.

`import ttscale` is light on purpose: no vllm, torch or ray is imported until an engine
or a model is actually needed.
"""

from typing import TYPE_CHECKING, Any

from ttscale.budget import Budget, Ledger
from ttscale.registry import Registry
from ttscale.types import Answer, Completion, Generation, Problem, RunRecord, Sample, SamplingParams

__version__ = "0.1.0"

STRATEGIES = Registry("strategy", entry_point_group="ttscale.strategies")
"""Test-time strategies: `async def strategy(problem, ctx, **params) -> Answer`."""
STRATEGIES.register("best_of_n", "ttscale.strategies.best_of_n:best_of_n", aliases=("bon", "best_of"))
STRATEGIES.register(
    "self_consistency", "ttscale.strategies.self_consistency:self_consistency", aliases=("sc", "majority")
)
STRATEGIES.register("beam", "ttscale.strategies.beam:beam", aliases=("beam_search",))
STRATEGIES.register("dvts", "ttscale.strategies.dvts:dvts")
STRATEGIES.register("rebase", "ttscale.strategies.rebase:rebase")
STRATEGIES.register("astar", "ttscale.strategies.astar:astar", aliases=("a_star", "astar_decoding"))
STRATEGIES.register("particle_filter", "ttscale.strategies.particle_filter:particle_filter", aliases=("pf",))
STRATEGIES.register("ets", "ttscale.strategies.ets:ets", aliases=("efficient_tree_search",))
STRATEGIES.register("genrm", "ttscale.strategies.genrm:genrm", aliases=("gen_rm",))
STRATEGIES.register("adaptive", "ttscale.strategies.adaptive:adaptive", aliases=("compute_optimal",))
STRATEGIES.register("budget_forcing", "ttscale.strategies.budget_forcing:budget_forcing", aliases=("s1",))
STRATEGIES.register("no_thinking", "ttscale.strategies.no_thinking:no_thinking", aliases=("nothinking",))
STRATEGIES.register("revision", "ttscale.strategies.revision:revision", aliases=("revisions", "sequential_revision"))

TASKS = Registry("task", entry_point_group="ttscale.tasks")
"""Tasks: factories `(**options) -> Task` (see ttscale.evals.base)."""
TASKS.register("arithmetic", "ttscale.evals.arithmetic:ArithmeticTask", aliases=("arith",))
TASKS.register("gsm8k", "ttscale.evals.datasets:gsm8k")
TASKS.register("math500", "ttscale.evals.datasets:math500", aliases=("math_500", "math"))
TASKS.register("aime24", "ttscale.evals.datasets:aime24", aliases=("aime2024",))
TASKS.register("aime25", "ttscale.evals.datasets:aime25", aliases=("aime2025",))
TASKS.register("jsonl", "ttscale.evals.datasets:jsonl_task")

VERIFIERS = Registry("verifier", entry_point_group="ttscale.verifiers")
"""Verifiers: factories `(**options) -> Verifier` (see ttscale.verifiers.base)."""
VERIFIERS.register("arithmetic", "ttscale.verifiers.arithmetic:ArithmeticVerifier", aliases=("arith",))
VERIFIERS.register("noisy_oracle", "ttscale.verifiers.noisy_oracle:NoisyOracle", aliases=("oracle",))
VERIFIERS.register("llm_judge", "ttscale.verifiers.llm_judge:LLMJudge", aliases=("judge",))
VERIFIERS.register("genrm", "ttscale.verifiers.genrm:GenRM")
VERIFIERS.register("prm", "ttscale.verifiers.prm:PRM", aliases=("process_reward_model",))


if TYPE_CHECKING:  # for type checkers and IDEs; at run time `__getattr__` imports it on first use
    from ttscale.api import Engine, Run, read_records, run
    from ttscale.comparison import compare
    from ttscale.report.frames import load_runs


def __getattr__(name: str) -> Any:
    # `load_runs` needs pandas: import it on first use so that `import ttscale` stays light.
    if name == "load_runs":
        from ttscale.report.frames import load_runs

        return load_runs
    if name in ("run", "Engine", "Run", "read_records"):  # the one-call API (ttscale.api): engines start only when used
        from ttscale import api

        return getattr(api, name)
    if name == "compare":  # paired comparisons (ttscale.comparison) run sweeps: imported on first use
        from ttscale.comparison import compare

        return compare
    raise AttributeError(f"module 'ttscale' has no attribute {name!r}")


__all__ = [
    "STRATEGIES",
    "TASKS",
    "VERIFIERS",
    "Answer",
    "Budget",
    "Completion",
    "Engine",
    "Generation",
    "Ledger",
    "Problem",
    "Registry",
    "Run",
    "RunRecord",
    "Sample",
    "SamplingParams",
    "__version__",
    "compare",
    "load_runs",
    "read_records",
    "run",
]
