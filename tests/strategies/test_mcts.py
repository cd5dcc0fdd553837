"""MCTS (ttscale.strategies.mcts) on a SCRIPTED engine, where each step, its score and its log-prob are set by the
test so that every selection is computed by hand (the comments), and on the SIMULATED policy end to end.

Neither engine is a model or vLLM: pure logic, milliseconds per run.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies.test_beam_reference import Script, ScriptedSteps, end
from ttscale.kit.params import params_class, parse_params
from ttscale.schema import Answer
from ttscale.search import Node
from ttscale.strategies import STRATEGIES
from ttscale.strategies.mcts import SETTLED, MCTSParams, best_reward, selection_score
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context


class ScoreTable:
    """SIMULATED process verifier: a step's score is `table[step text]` (0.5 if absent)."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    async def score_steps(self, ctx: Any, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        return [[self.table.get(step.strip(), 0.5) for step in steps] for steps in candidates]


# Two first steps A, B; below them one step each, then the end. With `aggregate=last` a node's value is its
# last step's score: v(A) = .6, v(B) = .4, v(A1) = .85, v(A2) = .2, v(B1) = .8, and a finished path ending in
# end(7) / end(2) / end(5) is worth .7 / .1 / 1.
SCRIPT: Script = {
    (): ["A", "B"],
    ("A",): ["A1", "A2"],
    ("B",): ["B1"],
    ("A", "A1"): [end(7)],
    ("A", "A2"): [end(2)],
    ("B", "B1"): [end(5)],
}
SCORES = {"A": 0.6, "B": 0.4, "A1": 0.85, "A2": 0.2, "B1": 0.8, end(7): 0.7, end(2): 0.1, end(5): 1.0}


def run_scripted(
    monkeypatch: pytest.MonkeyPatch, budget: str | int = "8k", *, logprob: dict[str, float] | None = None,
    scores: dict[str, float] = SCORES, **params: Any,
) -> tuple[Answer, dict[str, Any], ScriptedSteps]:
    monkeypatch.setattr("ttscale.strategies.mcts.load_verifier", lambda spec: ScoreTable(scores))
    engine = ScriptedSteps(SCRIPT, logprob)
    ctx = make_context(engine, budget)
    fn = STRATEGIES.get("mcts")
    answer = asyncio.run(fn(ctx.problem, ctx, parse_params(MCTSParams, {k: str(v) for k, v in params.items()})))
    return answer, ctx.ledger.to_dict(), engine


def expansions(engine: ScriptedSteps) -> list[tuple[str, ...]]:
    """The paths expanded by k steps, in order (a rollout's request has no stop string)."""
    return [r["path"] for r in engine.requests if r["stop"]]


def test_uct_visits_and_values_follow_the_hand_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    # UCT, c = 1, k = 2, the verifier's value. The root is expanded first: [A, B].
    # sim 1: A, B unvisited → A (first sampled). v = .6; expand A → [A1, A2]. N(root) = 1, N(A) = 1, W(A) = .6
    # sim 2: A: .6 + sqrt(ln 1 / 1) = .6; B unvisited → B. v = .4; expand B → [B1, B1]. N(root) = 2
    # sim 3: A: .6 + sqrt(ln 2) = 1.4326 > B: .4 + .8326 = 1.2326 → A; A1, A2 unvisited → A1. v = .85;
    #        expand A1 → [end7, end7]. N(A) = 2, W(A) = 1.45
    # sim 4: N(root) = 3: A: .725 + sqrt(ln 3 / 2) = 1.4662 > B: .4 + sqrt(ln 3) = 1.4481 → A (ln(N + 1) or
    #        UCB1's sqrt(2 ln N) would pick B here); A1 (N = 1) finite, A2 unvisited → A2. v = .2; expand A2.
    #        N(A) = 3, W(A) = 1.65
    # sim 5: N(root) = 4: A: .55 + sqrt(ln 4 / 3) = 1.2298 < B: .4 + sqrt(ln 4) = 1.5774 → B; → B1 (first).
    #        v = .8; expand B1. N(B) = 2, W(B) = 1.2
    a_q, b_q = (0.6 + 0.85 + 0.2) / 3, (0.4 + 0.8) / 2
    assert math.isclose(0.725 + math.sqrt(math.log(3) / 2), 1.4662, abs_tol=1e-4)  # the comment's arithmetic
    assert 0.725 + math.sqrt(math.log(4) / 2) < 0.4 + math.sqrt(math.log(4))  # ln(N + 1) would flip sim 4
    answer, ledger, engine = run_scripted(monkeypatch, simulations=5, expand=2, c_puct=1.0, selection="uct")
    assert expansions(engine) == [(), ("A",), ("B",), ("A", "A1"), ("A", "A2"), ("B", "B1")]
    info = answer.info
    assert info["simulations"] == 5 and not info["settled"]
    assert info["root_visits"] == [3, 2]
    assert info["root_values"] == [pytest.approx(a_q), pytest.approx(b_q)]
    assert info["expanded"] == 6 and info["nodes"] == 12 and info["max_depth"] == 3 and info["rollouts"] == 0
    # most visited: A (3) → A1 and A2 tie at 1 visit, A1's Q = .85 is higher → A1 (open): its finished children answer
    assert (info["answer_depth"], info["answer_visits"]) == (2, 1)
    assert answer.prediction == "7" and {s.answer for s in answer.samples} == {"7"}
    assert info["terminal_nodes"] == 6  # two end steps under each of A1, A2, B1
    # one verifier call per simulation's leaf, and one for the answer's unscored candidates
    assert ledger["tree"]["verifier_calls"] == 6 and ledger["tree"]["expansion_requests"] == 6


def test_the_vote_counts_every_finished_solution_by_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same five simulations; the six finished paths vote by verifier value: 5: 2·1.0 > 7: 2·.7 > 2: 2·.1,
    # where the most-visited path (previous test) answers 7.
    answer, _, _ = run_scripted(monkeypatch, simulations=5, expand=2, final="vote", selection="uct")
    assert answer.prediction == "5"
    assert answer.info["votes"] == {"5": pytest.approx(2.0), "7": pytest.approx(1.4), "2": pytest.approx(0.2)}
    assert answer.info["root_visits"] == [3, 2]  # the answer rule does not change the search


def test_rollouts_score_the_sampled_end_and_are_not_selected(monkeypatch: pytest.MonkeyPatch) -> None:
    # evaluation=rollout, UCT, c = 1, k = 2. Script steps are handed out in turn per path, rollouts included.
    # sim 1: A; rollout A → A1 → end7: v = .7; expand A → [A2, A1] (the script's next two).
    # sim 2: B; rollout B → B1 → end5: v = 1; expand B → [B1, B1].
    # sim 3: A: .7 + sqrt(ln 2) = 1.5326 < B: 1 + .8326 = 1.8326 → B → B1 (first, unvisited);
    #        rollout B1 → end5: v = 1; expand B1 → [end5, end5].
    answer, ledger, engine = run_scripted(monkeypatch, simulations=3, expand=2, evaluation="rollout",
                                          selection="uct")
    rollouts = [r["path"] for r in engine.requests if not r["stop"]]
    assert rollouts == [("A",), ("B",), ("B", "B1")] and all(r["n"] == 1 for r in engine.requests if not r["stop"])
    assert expansions(engine) == [(), ("A",), ("B",), ("B", "B1")]
    info = answer.info
    assert info["root_visits"] == [1, 2] and info["root_values"] == [pytest.approx(0.7), pytest.approx(1.0)]
    assert info["rollouts"] == 3 and info["nodes"] == 8
    assert ledger["tree"]["nodes"] == info["nodes"] + info["rollouts"]
    # most visited: B (2) → B1 (1, open): below it, its two end5 children and its own rollout
    assert answer.prediction == "5" and len(answer.samples) == 3 and info["answer_depth"] == 2


def test_puct_follows_the_log_prob_prior_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    # PUCT, c = 1, k = 2, v(B) = .08 here; mean log-probs A: −1, B: −0.5 → P(A) = .3775, P(B) = .6225; equal
    # siblings: P = ½.
    # sim 1: N(root) = 0: every score 0 → the likelier B. v = .08; expand B → [B1, B1].
    # sim 2: A: .3775·√1/1 = .3775 < B: .08 + .6225·√1/2 = .3912 → B (with √(N + 1): .5339 > .5202, A);
    #        B1, B1' both .5·1/1 → the first. v = .8; expand B1 → [end5, end5].
    # sim 3: A: .3775·√2 = .5339 < B: .44 + .6225·√2/3 = .7334 → B; B1: .8 + .5·√2/2 = 1.1536 > .7071 → B1;
    #        its end5 children both .5 → the first: finished, v = 1 (no expansion).
    # sim 4: A: .3775·√3 = .6539 < B: .6267 + .6225·√3/4 = .8962 → B; B1: .9 + .5·√3/3 = 1.1887 > .866 → B1;
    #        end5: 1 + .5·√2/2 = 1.3536 > .7071 → end5 again (a revisit of a finished node).
    prior_a = math.exp(-1) / (math.exp(-1) + math.exp(-0.5))
    assert math.isclose(prior_a, 0.3775, abs_tol=1e-4)
    assert prior_a < 0.08 + (1 - prior_a) / 2 and prior_a * math.sqrt(2) > 0.08 + (1 - prior_a) * math.sqrt(2) / 2
    logprob = {"A": -1.0, "B": -0.5}
    answer, ledger, engine = run_scripted(monkeypatch, simulations=4, expand=2, selection="puct", logprob=logprob,
                                          scores={**SCORES, "B": 0.08})
    assert all(r["logprobs"] == 0 for r in engine.requests)  # PUCT asks for the log-probs it needs
    assert expansions(engine) == [(), ("B",), ("B", "B1")]
    info = answer.info
    assert info["root_visits"] == [0, 4] and info["root_values"] == [None, pytest.approx((0.08 + 0.8 + 1 + 1) / 4)]
    assert (info["answer_depth"], info["answer_visits"]) == (3, 2) and answer.prediction == "5"
    assert ledger["tree"]["verifier_calls"] == 3  # B, B1, end5: a revisit re-uses the value


def test_the_issues_hand_example_openr_picks_the_unvisited_child_our_puct_the_visited_one() -> None:
    # Issue 44, item 4: root N = 1; A visited once, Q = .6, prior .31; B unvisited, prior .69, PRM value .4.
    # OpenR: c(N) = ln((1 + 19653) / 19652) + 1.25 = 1.2501; A: .6 + 1.2501·.31·1/2 = .794, B: .4 + 1.2501·.69 = 1.263.
    # Ours before (PUCT, c = 1, Q = 0 unvisited): A: .6 + .31/2 = .755, B: 0 + .69 = .690.
    openr = [selection_score("openr", q=q, prior=pr, parent_visits=1, visits=n, c=1.25)
             for q, pr, n in ((0.6, 0.31, 1), (0.4, 0.69, 0))]
    puct = [selection_score("puct", q=q, prior=pr, parent_visits=1, visits=n, c=1.0)
            for q, pr, n in ((0.6, 0.31, 1), (None, 0.69, 0))]
    assert openr == [pytest.approx(0.794, abs=5e-4), pytest.approx(1.263, abs=5e-4)] and openr[1] > openr[0]
    assert puct == [pytest.approx(0.755), pytest.approx(0.690)] and puct[0] > puct[1]
    # llm-reasoners' UCT at N(s) = 2: A: .6 + sqrt(ln 2) = 1.4326 > B (fast reward .4): 1.2326; ours: B first.
    rap = [selection_score("llm_reasoners", q=q, prior=0.5, parent_visits=2, visits=n, c=1.0)
           for q, n in ((0.6, 1), (0.4, 0))]
    assert rap == [pytest.approx(1.4326, abs=1e-4), pytest.approx(1.2326, abs=1e-4)]
    assert selection_score("uct", q=None, prior=0.5, parent_visits=2, visits=0, c=1.0) == math.inf
    # OpenR's c(N) to the digit where c_base matters (N = 10^5): ln((N + 19652 + 1) / 19652) + 1.25.
    c_n = math.log((100_000 + 19_653) / 19_652) + 1.25
    assert selection_score("openr", q=0.1, prior=0.5, parent_visits=100_000, visits=9, c=1.25) == pytest.approx(
        0.1 + c_n * 0.5 * math.sqrt(100_000) / 10, rel=1e-12)
    # llm-reasoners at N(s) = 1: ln 1 = 0, no exploration: the value alone.
    assert selection_score("llm_reasoners", q=0.6, prior=0.5, parent_visits=1, visits=1, c=1.0) == 0.6


def test_openr_vanila_mcts_is_the_default_and_walks_every_simulation_to_a_finished_solution(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 61: OpenR's evaluated MCTS is `vanila_mcts` (tree.py:330-409): every open leaf the walk reaches is
    # expanded at once and the walk goes on, so each simulation ends at a finished solution valued by its r.
    # Default selection, k = 2, no log-probs (uniform priors ½); c(N) = ln((N + 19653)/19652) + 1.25.
    # sim 1: N(root) = 0, no exploration: A .6 > B .4 → A, expanded → [A1 .85, A2 .2] → A1, expanded → [end7 .7,
    #        end7 .7] → end7 (the first); v = .7.
    # sim 2: N(root) = 1: A: .7 + 1.25005·½·1/2 = 1.0125 < B: .4 + 1.25005·½·1/1 = 1.0250 → B, expanded → [B1, B1]
    #        (.8) → B1, expanded → [end5, end5] (1) → end5; v = 1.
    # sim 3: √2: A: .7 + 1.2501·½·√2/2 = 1.1420 < B: 1 + 1.2501·½·√2/2 = 1.4420 → B; N(B) = 1: B1 (N = 1):
    #        1 + 1.25005·½/2 = 1.3125 < B1' (unvisited): .8 + 1.25005·½ = 1.4250 → B1', expanded → end5''; v = 1.
    # sim 4: √3: A: .7 + 1.25015·½·√3/2 = 1.2413 < B: 1 + 1.25015·½·√3/3 = 1.3609 → B; B1, B1' tie (1.4420) → B1;
    #        end5 (N = 1): 1 + 1.25005·½/2 = 1.3125 < end5' (unvisited): 1 + 1.25005·½ = 1.625 → end5'; v = 1.
    # OpenR's _simulate (selection=openr_simulate) stops each walk at an unvisited leaf instead: its root values
    # differ on the same tree (the next test).
    assert math.isclose(0.7 + 1.25005 * 0.5 / 2, 1.0125, abs_tol=1e-4)
    assert math.isclose(0.4 + 1.25005 * 0.5, 1.0250, abs_tol=1e-4)
    assert math.isclose(0.7 + 1.25015 * 0.5 * math.sqrt(3) / 2, 1.2413, abs_tol=1e-4)
    answer, ledger, engine = run_scripted(monkeypatch, simulations=4, expand=2)
    assert expansions(engine) == [(), ("A",), ("A", "A1"), ("B",), ("B", "B1"), ("B", "B1")]
    info = answer.info
    assert info["selection"] == "openr" and info["root_visits"] == [1, 3]
    assert info["root_values"] == [pytest.approx(0.7), pytest.approx(1.0)]
    assert info["simulations"] == 4 and info["rollouts"] == 0
    assert answer.prediction == "5" and (info["answer_depth"], info["answer_visits"]) == (3, 1)
    # every child scored once, as it was sampled (six expansions of two); a finished leaf's value is that score
    assert ledger["reward_evaluations"] == 12
    # OpenR's _simulate on the same tree stops its walks at unvisited leaves: A .6 (sim 1), B .4 (sim 2), A again and
    # expanded at its second visit → A1 .85 (sim 3), then A → A1 expanded → end7 .7 (sim 4): [(.6 + .85 + .7)/3, .4].
    simulate, _, _ = run_scripted(monkeypatch, simulations=4, expand=2, selection="openr_simulate")
    assert simulate.info["root_values"] == [pytest.approx((0.6 + 0.85 + 0.7) / 3, abs=1e-6), pytest.approx(0.4)]


def test_openr_simulate_follows_its_reference_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    # selection=openr_simulate (OpenR's _simulate), k = 2. Mean log-probs A: −1, B: −0.2 → P(A) = .31,
    # P(B) = .69; the root's children are scored as they are sampled: r(A) = .6, r(B) = .4 (their Q until visited).
    # sim 1: N(root) = 0, no exploration: A .6 > B .4 → A; v = r(A) = .6, not expanded (first visit).
    # sim 2: the issue's example: A .794 < B 1.263 → B; v = .4. N(root) = 2.
    # sim 3: c(2) = 1.25015, √2: A: .6 + 1.25015·.31·√2/2 = .8741 < B: .4 + 1.25015·.69·√2/2 = 1.0100 → B, visited:
    #        expanded now → [B1, B1], r = .8 each, P = ½; B1: .8 + 1.2501·½·1/1 = 1.425 (both) → the first; v = .8.
    # sim 4: √3: A: .6 + .31·1.25015·√3/2 = .9356 < B: (.4 + .8)/2 + .69·1.25015·√3/3 = 1.0980 → B; N(B) = 2:
    #        B1 (N = 1): .8 + .5·1.2501·√2/2 = 1.2420 < B1' (N = 0): .8 + .5·1.2501·√2 = 1.6840 → B1'; v = .8.
    # sim 5: A: .6 + .31·1.2502·2/2 = .9876 < B: 2/3 + .69·1.2502·2/4 = 1.0980 → B; B1, B1' both 1.3413 → B1,
    #        visited: expanded → [end5, end5], r = 1 → end5 (finished); v = 1.
    # Ours before (UCT) expands A at sim 1 and B at sim 2 (expansions (), A, B, ...).
    assert math.isclose(0.6 + 1.25015 * 0.31 * math.sqrt(2) / 2, 0.8741, abs_tol=1e-4)
    assert math.isclose(0.4 + 1.25015 * 0.69 * math.sqrt(2) / 2, 1.0100, abs_tol=1e-4)
    logprob = {"A": -1.0, "B": -0.2}
    assert math.isclose(math.exp(-0.2) / (math.exp(-1) + math.exp(-0.2)), 0.69, abs_tol=1e-3)
    answer, ledger, engine = run_scripted(monkeypatch, simulations=5, expand=2, logprob=logprob,
                                          selection="openr_simulate")
    assert all(r["logprobs"] == 0 for r in engine.requests)  # the prior needs the log-probs
    assert expansions(engine) == [(), ("B",), ("B", "B1")]
    info = answer.info
    assert info["selection"] == "openr_simulate" and info["root_visits"] == [1, 4]
    assert info["root_values"] == [pytest.approx(0.6), pytest.approx((0.4 + 0.8 + 0.8 + 1.0) / 4)]
    assert answer.prediction == "5" and (info["answer_depth"], info["answer_visits"]) == (3, 1)
    # every child scored once, as it was sampled (2 + 2 + 2); the leaves' values are those scores, not re-scored
    assert ledger["reward_evaluations"] == 6 and ledger["tree"]["verifier_calls"] == 3


def test_llm_reasoners_starts_an_unvisited_child_at_its_fast_reward(monkeypatch: pytest.MonkeyPatch) -> None:
    # selection=llm_reasoners, c = 1, k = 2; children scored as sampled (their fast reward), expanded at first visit.
    # sim 1: N(root) = 0 → A (.6 > .4); v = .6; expand A → [A1 .85, A2 .2].
    # sim 2: N(root) = 1, ln 1 = 0: A (Q .6) > B (fast .4) → A (ours before: the unvisited B first);
    #        N(A) = 1: A1 .85 > A2 .2 → A1; v = .85; expand A1 → [end7, end7] (.7 each).
    # sim 3: ln 2: A: .725 + sqrt(ln 2 / 2) = 1.3137 > B: .4 + sqrt(ln 2) = 1.2326 → A; A1: .85 + .8326 > A2:
    #        .2 + .8326 → A1; ln 1 = 0: end7, end7' tie → the first; finished, v = .7.
    # sim 4: ln 3: A: .7167 + sqrt(ln 3 / 3) = 1.3218 < B: .4 + sqrt(ln 3) = 1.4481 → B; v = .4; expand B.
    # sim 5: ln 4: A: .7167 + .6798 = 1.3965 < B: .4 + 1.1774 = 1.5774 → B → B1 (ties: first); v = .8; expand B1.
    # sim 6: ln 5: A: .7167 + .7324 = 1.4491 < B: .6 + sqrt(ln 5 / 2) = 1.4971 → B; B1: .8 + sqrt(ln 2) ties B1'
    #        → B1; N(B1) = 1: → end5; finished, v = 1.
    # best_reward: the visited finished paths A, A1, end7 (.6 + .85 + .7 = 2.15) and B, B1, end5 (.4 + .8 + 1 = 2.2).
    assert 0.725 + math.sqrt(math.log(2) / 2) > 0.4 + math.sqrt(math.log(2))
    answer, _, engine = run_scripted(monkeypatch, simulations=3, expand=2, selection="llm_reasoners")
    assert expansions(engine) == [(), ("A",), ("A", "A1")] and answer.info["root_visits"] == [3, 0]
    assert all(r["logprobs"] is None for r in engine.requests)  # UCT needs no prior
    assert answer.prediction == "7" and answer.info["answer_depth"] == 3
    answer, _, engine = run_scripted(monkeypatch, simulations=6, expand=2, selection="llm_reasoners",
                                     final="best_reward")
    assert expansions(engine) == [(), ("A",), ("A", "A1"), ("B",), ("B", "B1")]
    assert answer.info["root_visits"] == [3, 3] and answer.info["final"] == "best_reward"
    assert answer.prediction == "5" and (answer.info["answer_depth"], answer.info["answer_visits"]) == (3, 1)


def test_best_reward_takes_the_visited_finished_path_of_the_highest_reward_sum() -> None:
    # llm-reasoners' max_reward: a DFS over visited children to finished nodes, the largest sum of step rewards.
    root = Node(id=0, parent=None, token_ids=())
    a = Node(id=1, parent=root, token_ids=(), depth=1, value=0.9)
    a_end = Node(id=2, parent=a, token_ids=(), depth=2, value=0.2, finish="stop")  # .9 + .2 = 1.1
    b = Node(id=3, parent=root, token_ids=(), depth=1, value=0.4)
    b_end = Node(id=4, parent=b, token_ids=(), depth=2, value=0.9, finish="stop")  # .4 + .9 = 1.3
    c_end = Node(id=5, parent=b, token_ids=(), depth=2, value=1.0, finish="stop")  # 1.4, never visited
    visits = {0: 3, 1: 1, 2: 1, 3: 2, 4: 1}
    assert best_reward([a_end, b_end, c_end], visits) is b_end
    assert best_reward([a_end, c_end], {0: 1, 1: 1, 2: 1}) is a_end
    assert best_reward([c_end], visits) is None  # none visited: the caller falls back to the most-visited rule
    # An equal sum keeps the earlier node (the reference's max keeps the first); a value of 0 counts as 0.
    b_end.value = 0.6  # .4 + .6 = 1.0
    zero = Node(id=6, parent=root, token_ids=(), depth=1, value=0.0)
    zero_end = Node(id=7, parent=zero, token_ids=(), depth=2, value=1.0, finish="stop")  # 0 + 1 = 1.0
    visits.update({6: 1, 7: 1})
    assert best_reward([a_end, b_end, zero_end], visits) is a_end  # 1.1 over two 1.0s
    assert best_reward([b_end, zero_end], visits) is b_end and best_reward([zero_end, b_end], visits) is zero_end


def test_most_visited_breaks_a_tie_by_value_and_an_open_end_answers_with_its_partial_solution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two simulations visit A (v = .3 here) and B (v = .4) once each: a tie in visits, B's Q is higher. B is open and
    # nothing below it has finished (its children B1 are open steps), so B's own partial solution is the candidate.
    answer, _, _ = run_scripted(monkeypatch, simulations=2, expand=2, scores={**SCORES, "A": 0.3},
                                selection="uct")
    assert answer.info["root_visits"] == [1, 1]
    assert [s.text for s in answer.samples] == ["B"] and answer.info["answer_visits"] == 1


def test_uct_asks_for_no_log_probs(monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, engine = run_scripted(monkeypatch, simulations=2, expand=2, selection="uct")
    assert engine.requests and all(r["logprobs"] is None for r in engine.requests)


def test_an_until_budget_search_stops_once_it_settles_on_finished_solutions(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every first step ends the solution: the k = 3 first simulations visit them, then each simulation revisits a
    # finished node at no cost; SETTLED of those in a row end the search long before the budget does.
    monkeypatch.setitem(SCRIPT, (), [end(4)])
    answer, ledger, engine = run_scripted(monkeypatch, expand=3)
    assert answer.info["simulations"] == 3 + SETTLED and answer.info["settled"]
    assert len(engine.requests) == 1 and ledger["spent"] < 100
    assert sum(answer.info["root_visits"]) == answer.info["simulations"] and answer.prediction == "4"


@pytest.mark.parametrize("mode", [{}, {"evaluation": "rollout"}, {"selection": "uct", "evaluation": "rollout"},
                                  {"selection": "openr_simulate"},
                                  {"selection": "openr_simulate", "evaluation": "rollout"},
                                  {"selection": "puct"}, {"selection": "uct"}, {"selection": "llm_reasoners"},
                                  {"final": "vote"}, {"final": "best_reward"}])
def test_on_the_simulator_the_search_finds_the_answer_and_its_statistics_agree(mode: dict[str, str]) -> None:
    correct = 0
    for i in range(8):
        sim = SimulatedArithmeticPolicy(seed=i, p_correct=0.4)
        ctx = make_context(sim, "4k", problem_index=i)
        p = parse_params(MCTSParams, {"verifier": "noisy_oracle:noise=0", "c_puct": "2", **mode})
        answer = asyncio.run(STRATEGIES.get("mcts")(ctx.problem, ctx, p))
        correct += ctx.task.grade(answer.prediction, ctx.problem)
        info, ledger = answer.info, ctx.ledger.to_dict()
        tree = ledger["tree"]
        assert info["simulations"] >= 1 and sum(info["root_visits"]) == info["simulations"]
        assert len(info["root_visits"]) == 4 and info["answer_visits"] <= max(info["root_visits"])
        assert tree["nodes"] == info["nodes"] + info["rollouts"]
        assert tree["expansion_requests"] == info["expanded"] + info["rollouts"]
        if "selection" not in mode:  # OpenR's vanila_mcts: every walk ends at a finished solution (no rollout)
            assert info["rollouts"] == 0 and info["terminal_nodes"] >= 1
        elif mode.get("evaluation") == "rollout":  # a rollout per open leaf, then its expansion (unless budget ends)
            assert info["expanded"] - 1 <= info["rollouts"]
            # OpenR expands a leaf at its second visit: its rollouts (first visits) may outnumber the expansions
            assert mode.get("selection") != "uct" or info["rollouts"] <= info["expanded"]
        else:
            assert info["rollouts"] == 0 and info["simulations"] >= info["expanded"] - 1
        assert 1 <= info["max_depth"] <= p.max_steps and info["terminal_nodes"] <= tree["nodes"]
        assert ledger["spent"] <= 4000 and ledger["generated_tokens"] == sim.generated_tokens
    assert correct >= 7  # an exact oracle leads it to the right value (the policy states it 40% of the time)


def test_without_a_verifier_signal_it_is_near_chance_and_with_one_far_above() -> None:
    def accuracy(verifier: str) -> float:
        hits = 0
        for i in range(12):
            sim = SimulatedArithmeticPolicy(seed=i, p_correct=0.4)
            ctx = make_context(sim, "4k", problem_index=i)
            p = parse_params(MCTSParams, {"verifier": verifier})
            answer = asyncio.run(STRATEGIES.get("mcts")(ctx.problem, ctx, p))
            hits += ctx.task.grade(answer.prediction, ctx.problem)
        return hits / 12

    assert accuracy("noisy_oracle:noise=0") >= accuracy("noisy_oracle:noise=10") + 0.25


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    budget=st.integers(1, 3000),
    max_tokens=st.integers(1, 300),
    step_tokens=st.integers(1, 64),
    seed=st.integers(0, 10_000),
    mode=st.sampled_from([{}, {"evaluation": "rollout"}, {"selection": "puct"}, {"selection": "uct"},
                          {"selection": "llm_reasoners", "final": "best_reward"}, {"final": "vote"}]),
    simulations=st.sampled_from([None, 1, 3, 50]),
)
def test_every_mode_keeps_the_budget_and_reports_every_token(
    budget: int, max_tokens: int, step_tokens: int, seed: int, mode: dict[str, str], simulations: int | None
) -> None:
    # test_budget_property.py checks the default parameters; the rollouts (to the end) and PUCT's log-probs here.
    sim = SimulatedArithmeticPolicy(seed=seed)
    ctx = make_context(sim, budget, problem_index=seed % 60)
    raw = {"max_tokens": str(max_tokens), "step_tokens": str(step_tokens), "simulations": str(simulations), **mode}
    answer = asyncio.run(STRATEGIES.get("mcts")(ctx.problem, ctx, parse_params(MCTSParams, raw)))
    ledger = ctx.ledger.to_dict()
    assert ledger["spent"] <= budget and ledger["generated_tokens"] == sim.generated_tokens
    assert ctx.ledger.reserved == 0
    assert all(0 < s.num_tokens <= max_tokens for s in answer.samples)
    assert simulations is None or answer.info["simulations"] <= simulations
    assert sum(answer.info["root_visits"]) == answer.info["simulations"]


def test_it_is_registered_where_the_budget_property_finds_it() -> None:
    assert "mcts" in STRATEGIES.names() and STRATEGIES.get("monte_carlo_tree_search") is STRATEGIES.get("mcts")
    assert params_class(STRATEGIES.get("mcts")) is MCTSParams


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"expand": "0"}, "expand must be ≥ 1, got 0"),
        ({"simulations": "0"}, "simulations must be ≥ 1, got 0"),
        ({"c_puct": "-1"}, r"c_puct must be in \[0, 100\], got -1.0"),
        ({"c_base": "0.5"}, r"c_base must be in \[1, 1e\+09\], got 0.5"),
        ({"c_base": "1000000000.5"}, r"c_base must be in \[1, 1e\+09\], got 1000000000.5"),
        ({"selection": "ucb"}, "parameter selection must be"),
        ({"evaluation": "prm"}, "parameter evaluation must be"),
        ({"final": "best"}, "parameter final must be"),
        ({"max_tokens": "0"}, "max_tokens must be ≥ 1, got 0"),
    ],
)
def test_params_are_validated(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_params(MCTSParams, raw)


def test_params_from_python_are_validated_too() -> None:
    rules = "openr, openr_simulate, llm_reasoners, uct or puct"
    with pytest.raises(ValueError, match=f"selection must be {rules}, got 'ucb'"):
        MCTSParams(selection="ucb")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="final must be most_visited, vote or best_reward, got 'best'"):
        MCTSParams(final="best")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        MCTSParams(4)  # type: ignore[misc]  # keyword-only
    p = MCTSParams()
    # The reference (OpenR) is the default, at its own constants; each rule's c is its reference's.
    assert (p.selection, p.evaluation, p.final, p.simulations, p.expand, p.c_puct, p.c, p.c_base) == (
        "openr", "verifier", "most_visited", None, 4, None, 1.25, 19652.0)
    assert [MCTSParams(selection=rule).c for rule in ("openr_simulate", "llm_reasoners", "uct", "puct")] == [
        1.25, 1.0, 1.0, 1.0]
    assert MCTSParams(selection="uct", c_puct=2.0).c == 2.0
    assert MCTSParams(c_base=1.5).c_base == 1.5  # any base ≥ 1


class _Growing:
    """A script (ScriptedSteps reads it with `.get`): the root's steps are a finished solution, `end(4)`, and an
    open step X; below X every path goes on with two open steps, forever."""

    def get(self, path: tuple[str, ...]) -> list[str] | None:
        if not path:
            return [end(4), "X"]
        return [f"X{len(path)}a", f"X{len(path)}b"] if path[0] == "X" else None


def test_revisits_that_are_not_in_a_row_do_not_settle_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    # UCT with c = 2, k = 2: the finished end(4) (value .9) is revisited in runs, each run broken by a walk into
    # X's subtree (value .5), which always ends at a new open leaf and expands it (6 generated tokens). The runs
    # stay shorter than SETTLED, so the search goes on until the budget ends it, though it revisits end(4) far
    # more than SETTLED times in all: SETTLED counts revisits in a row, not in all.
    monkeypatch.setattr("ttscale.strategies.mcts.load_verifier", lambda spec: ScoreTable({end(4): 0.9}))
    engine = ScriptedSteps(_Growing())  # type: ignore[arg-type]
    ctx = make_context(engine, 200)
    p = parse_params(MCTSParams, {"expand": "2", "selection": "uct", "c_puct": "2"})
    answer = asyncio.run(STRATEGIES.get("mcts")(ctx.problem, ctx, p))
    info, ledger = answer.info, ctx.ledger.to_dict()
    revisits = info["root_visits"][0] - 1  # every visit of end(4) after its first
    assert revisits >= 2 * SETTLED and not info["settled"], info
    assert ledger["spent"] > 200 - 6, ledger  # stopped by the budget: less than one expansion was left
    assert answer.prediction == "4"
