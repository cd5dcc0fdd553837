"""Test-time strategies, one per file (installed as `ttscale.strategies`), and their registry.

A strategy is `async def name(problem, ctx, p) -> Answer`: `ctx` meters every engine call on the problem's
ledger (`ctx.ledger`), `p` is its parameter class, attached with what it can do beyond running by
`@ttscale.kit.params.strategy(Params, replay=..., difficulty_pool=..., adaptive_candidate=...)` (see
ttscale.kit.capabilities: sweeps, held-out cells and adaptive routing read these, never a strategy's name).
Adding a strategy is its file and one line here. Built-ins are registered by path (imported when chosen); a
plugin registers with `@STRATEGIES.register("name")` or under the `ttscale.strategies` entry-point group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ttscale.registry import Registry

if TYPE_CHECKING:
    from ttscale.kit.context import Context
    from ttscale.schema import Answer, Problem

    Strategy = Callable[[Problem, Context, Any], Awaitable[Answer]]
    """A strategy: (problem, context, parameters) -> answer."""

STRATEGIES: Registry[Strategy] = Registry("strategy", entry_point_group="ttscale.strategies")
"""Test-time strategies by name: `async def strategy(problem, ctx, p) -> Answer` (see the module doc)."""
STRATEGIES.register("best_of_n", "ttscale.strategies.best_of_n:best_of_n", aliases=("bon", "best_of"))
STRATEGIES.register(
    "self_consistency", "ttscale.strategies.self_consistency:self_consistency", aliases=("sc", "majority")
)
STRATEGIES.register("beam", "ttscale.strategies.beam:beam", aliases=("beam_search",))
STRATEGIES.register("dvts", "ttscale.strategies.dvts:dvts")
STRATEGIES.register("rebase", "ttscale.strategies.rebase:rebase")
STRATEGIES.register("astar", "ttscale.strategies.astar:astar", aliases=("a_star", "astar_decoding"))
STRATEGIES.register("mcts", "ttscale.strategies.mcts:mcts", aliases=("monte_carlo_tree_search",))
STRATEGIES.register("particle_filter", "ttscale.strategies.particle_filter:particle_filter", aliases=("pf",))
STRATEGIES.register("ets", "ttscale.strategies.ets:ets", aliases=("efficient_tree_search",))
STRATEGIES.register("genrm", "ttscale.strategies.genrm:genrm", aliases=("gen_rm",))
STRATEGIES.register("adaptive", "ttscale.strategies.adaptive:adaptive", aliases=("compute_optimal",))
STRATEGIES.register("deepconf", "ttscale.strategies.deepconf:deepconf", aliases=("deep_conf",))
STRATEGIES.register("budget_forcing", "ttscale.strategies.budget_forcing:budget_forcing", aliases=("s1",))
STRATEGIES.register("no_thinking", "ttscale.strategies.no_thinking:no_thinking", aliases=("nothinking",))
STRATEGIES.register(
    "generated_tests", "ttscale.strategies.generated_tests:generated_tests", aliases=("codemonkeys", "codet")
)
STRATEGIES.register("sleep_time", "ttscale.strategies.sleep_time:sleep_time", aliases=("sleep", "sleeptime"))
STRATEGIES.register("revision", "ttscale.strategies.revision:revision", aliases=("revisions", "sequential_revision"))
