"""Tree strategies on the SIMULATED policy (ttscale.testing.policy): shapes, stopping rules, verifier use.

Pure logic, milliseconds per run. What vLLM does with them is tested in test_engine_search.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ttscale.kit.params import params_class, parse_params
from ttscale.strategies import STRATEGIES
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context

TREE_STRATEGIES = ["beam", "dvts", "rebase", "ets", "astar", "particle_filter"]
ORACLE = "noisy_oracle:noise=0"
ORACLE_03 = "noisy_oracle:noise=0.3"


def run_sim(
    name: str,
    budget: str | int = "4k",
    *,
    index: int = 0,
    seed: int = 0,
    policy: dict[str, Any] | None = None,
    **params: Any,
) -> tuple[Any, dict[str, Any], SimulatedArithmeticPolicy]:
    fn = STRATEGIES.get(name)
    sim = SimulatedArithmeticPolicy(seed=seed, **(policy or {}))
    ctx = make_context(sim, budget, problem_index=index)
    answer = asyncio.run(fn(ctx.problem, ctx, parse_params(params_class(fn), {k: str(v) for k, v in params.items()})))
    answer_ok = ctx.task.grade(answer.prediction, ctx.problem)
    return answer, {**ctx.ledger.to_dict(), "correct": answer_ok, "reference": ctx.problem.reference}, sim


def accuracy(name: str, problems: int = 20, **params: Any) -> float:
    return sum(run_sim(name, index=i, seed=i, **params)[1]["correct"] for i in range(problems)) / problems


def test_beam_keeps_n_over_m_prefixes_and_expands_them_to_n_candidates() -> None:
    answer, ledger, sim = run_sim("beam", n=8, width=4, policy={"p_intro": 1.0, "p_recheck": 0.5})
    first, *rest = sim.requests
    assert first["n"] == 8 and len(first["prompt"]) < len(rest[0]["prompt"])
    assert rest and all(r["n"] in (4, 8) for r in rest)  # M each, or all N for a lone survivor
    per_depth = ledger["tree"]["nodes_per_depth"]
    # search-and-learn pads the beams back to N: every depth the search reaches holds N candidates
    assert per_depth == [8] * len(per_depth) and len(per_depth) >= 3
    assert answer.info["n"] == 8 and answer.info["width"] == 4
    assert ledger["tree"]["verifier_calls"] == ledger["tree"]["steps"]


@pytest.mark.parametrize("name", ["beam", "dvts"])
def test_the_last_iteration_runs_every_surviving_path_to_its_end(name: str) -> None:
    # p_recheck = 1: a solution needs 4 steps; at max_steps = 2 the second iteration is the last.
    answer, ledger, sim = run_sim(name, n=8, width=4, max_steps=2, policy={"p_intro": 1.0, "p_recheck": 1.0})
    first, *rest = sim.requests
    assert first["stop"] == ("\n\n",) and rest and all(r["stop"] == () for r in rest)
    assert all(r["max_tokens"] > 96 for r in rest)  # the path's remaining tokens, not one step's
    assert answer.samples and all(s.finish_reason == "stop" and s.answer is not None for s in answer.samples)
    assert ledger["tree"]["nodes_per_depth"] == [8, 8]


def test_beam_width_from_budget_is_best_of_n_rounded_to_m() -> None:
    answer, _, _ = run_sim("beam", "4k", max_tokens=256, width=4)
    assert answer.info["n"] == 12  # 4000 // 256 = 15 → 12


@pytest.mark.parametrize("name", TREE_STRATEGIES)
def test_an_informative_verifier_lifts_accuracy_far_above_a_blind_one(name: str) -> None:
    # The policy states the right value 40% of the time; the oracle sees which; σ = 10 sees nothing.
    policy = {"p_correct": 0.4}
    informed = sum(run_sim(name, index=i, seed=i, policy=policy, verifier=ORACLE)[1]["correct"] for i in range(16)) / 16
    blind = sum(
        run_sim(name, index=i, seed=i, policy=policy, verifier="noisy_oracle:noise=10")[1]["correct"] for i in range(16)
    ) / 16
    assert informed >= 0.85
    assert informed >= blind + 0.25


def test_arithmetic_verifier_steers_beam_search() -> None:
    assert accuracy("beam", verifier="arithmetic", n=8, width=4) >= 0.9


def test_dvts_runs_independent_greedy_subtrees_and_votes_over_all_final_leaves() -> None:
    answer, ledger, sim = run_sim("dvts", n=8, width=4, policy={"p_intro": 1.0, "p_recheck": 0.5})
    # every subtree's last M candidates (the finished ones among them), not only its best one
    assert answer.info["subtrees"] == 2 and 2 < len(answer.samples) <= 8
    assert sum(answer.info["votes"].values()) == pytest.approx(sum(s.score or 0 for s in answer.samples))
    assert sim.requests[0]["n"] == 8 and all(r["n"] == 4 for r in sim.requests[1:])
    per_depth = ledger["tree"]["nodes_per_depth"]
    assert per_depth[0] == 8 and all(count <= 8 for count in per_depth)
    assert ledger["tree"]["verifier_calls"] == ledger["tree"]["steps"]


def test_rebase_allocates_the_remaining_width_by_softmax() -> None:
    answer, ledger, sim = run_sim("rebase", n=8, policy={"p_intro": 1.0}, verifier=ORACLE, temperature_b=0.01)
    assert sim.requests[0]["n"] == 8
    per_depth = ledger["tree"]["nodes_per_depth"]
    assert per_depth[1] == 8  # no first step ends: all 8 children are re-allocated
    assert sum(r["n"] for r in sim.requests[1:]) == sum(per_depth[1:])
    assert answer.info["n"] == 8 and len(answer.samples) <= 8
    # With T_b → 0, every child of a round goes to the best-valued nodes: the search converges on the right value.
    assert accuracy("rebase", n=8, verifier=ORACLE, temperature_b=0.01) >= 0.9


def test_rebase_at_low_temperature_gives_every_child_to_the_best_nodes() -> None:
    # p_intro = 0: every first step states a value; the oracle scores right ones 1 and wrong ones 0.
    answer, ledger, sim = run_sim(
        "rebase", n=8, policy={"p_intro": 0.0, "p_recheck": 1.0}, verifier=ORACLE, temperature_b=0.01
    )
    second_round = [r for r in sim.requests[1:] if sim.detokenize(r["prompt"]).count("\n\n") == 1]
    assert second_round
    assert all(sim.detokenize(r["prompt"]).endswith(f"= {ledger['reference']}\n\n") for r in second_round)
    assert answer.prediction == ledger["reference"]


def test_ets_without_costs_is_exactly_rebase() -> None:
    # λ_c = λ_s = 0: the ILP has nothing to gain by pruning and keeps every node (ties keep), so the
    # re-allocation over the kept nodes is REBASE's own: same requests, same tree, same answer.
    for i in range(6):
        policy = {"p_intro": 0.5, "p_recheck": 0.5}
        common: dict[str, Any] = {"index": i, "seed": i, "policy": policy, "n": 8, "verifier": ORACLE_03}
        rebase, rebase_ledger, rebase_sim = run_sim("rebase", **common)
        ets, ets_ledger, ets_sim = run_sim("ets", lambda_c=0, lambda_s=0, **common)
        assert ets_sim.requests == rebase_sim.requests
        assert ets_ledger["tree"] == rebase_ledger["tree"]
        assert ets.samples == rebase.samples and ets.prediction == rebase.prediction
        assert ets.info["ilp_kept"] == ets.info["ilp_considered"]


def test_ets_samples_the_full_width_from_fewer_prefixes() -> None:
    # Depths 1-2 never end here (an intro, then a value), so every round re-allocates all N children.
    # (Unique KV is not compared here: the simulator's steps come from a handful of texts, so distinct
    # parents often hold identical tokens; benchmarks/search.py compares it on the real model.)
    policy = {"p_intro": 1.0, "p_recheck": 0.8}
    rebase_parents = ets_parents = 0
    for i in range(10):
        common: dict[str, Any] = {"index": i, "seed": i, "policy": policy, "n": 16, "verifier": ORACLE_03}
        _, _, rebase_sim = run_sim("rebase", **common)
        ets, ets_ledger, ets_sim = run_sim("ets", lambda_c=4, **common)
        assert ets_ledger["tree"]["nodes_per_depth"][:3] == [16, 16, 16]
        assert ets.info["ilp_kept"] < ets.info["ilp_considered"]  # the ILP pruned
        rebase_parents += len(rebase_sim.requests)
        ets_parents += len(ets_sim.requests)
        assert ets_ledger["correct"]  # an exact oracle still leads it to the answer
    assert ets_parents < 0.8 * rebase_parents  # the same children from fewer distinct prefixes


def test_astar_stops_at_the_first_goal_popped_and_is_token_frugal() -> None:
    answer, ledger, _ = run_sim("astar", verifier=ORACLE, k=4)
    assert answer.info["goal_popped"] and len(answer.samples) == 1
    assert answer.samples[0].finish_reason == "stop" and ledger["correct"]
    frugal = sum(run_sim("astar", index=i, seed=i, verifier=ORACLE)[1]["generated_tokens"] for i in range(10))
    wide = sum(run_sim("beam", index=i, seed=i, verifier=ORACLE, n=8)[1]["generated_tokens"] for i in range(10))
    assert frugal < wide


@pytest.mark.parametrize("parallel", [1, 2, 4, 8])
def test_astar_pops_parallel_states_per_round_and_scores_them_in_one_call(parallel: int) -> None:
    for i in range(4):
        answer, ledger, _ = run_sim("astar", "8k", index=i, seed=i, verifier=ORACLE_03, k=2, parallel=parallel,
                                    policy={"p_intro": 1.0})
        rounds, expanded = ledger["tree"]["verifier_calls"], answer.info["expansions"]
        # One engine request per expanded state, one verifier call per round over all their children.
        assert ledger["tree"]["expansion_requests"] == expanded
        assert rounds <= expanded <= 1 + parallel * (rounds - 1)  # the root alone, then ≤ b states a round
        if parallel == 1:
            assert expanded == rounds  # the paper's A*: one state per round
        else:  # k = 2 children per state: from the second round on, ≥ 2 states are open to pop together
            assert expanded > rounds


def test_reward_evaluations_count_every_scored_path_in_one_unit_for_searches_and_pools() -> None:
    # A*'s claim is in reward calls: a PRM pass per partial path it scores, and one per solution best-of-N scores.
    for name in ("astar", "beam", "rebase"):
        _, ledger, _ = run_sim(name, verifier=ORACLE_03, n=8) if name != "astar" else run_sim(name, verifier=ORACLE_03)
        assert ledger["reward_evaluations"] == ledger["tree"]["verifier_candidates"] > 0
    _, ledger, _ = run_sim("best_of_n", n=6, verifier=ORACLE_03)
    assert ledger["reward_evaluations"] == 6
    _, ledger, _ = run_sim("self_consistency", n=6)  # a plain vote scores nothing
    assert ledger["reward_evaluations"] == 0


def test_astar_without_budget_for_a_goal_still_answers() -> None:
    answer, ledger, _ = run_sim("astar", 40, policy={"p_intro": 1.0}, k=2)
    assert not answer.info["goal_popped"] and ledger["spent"] <= 40


def test_particle_filter_keeps_n_particles_and_merges_resampled_copies() -> None:
    answer, ledger, sim = run_sim("particle_filter", n=8, verifier=ORACLE, policy={"p_intro": 1.0})
    assert len(answer.samples) == 8  # the final particle set (ended particles, copies included)
    assert answer.info["resamplings"] >= 1
    assert any(r["n"] > 1 for r in sim.requests[1:])  # a particle drawn k times: one request, n = k
    assert all(s.finish_reason == "stop" for s in answer.samples)
    assert ledger["correct"]


@pytest.mark.parametrize("name", TREE_STRATEGIES)
def test_same_seed_same_search(name: str) -> None:
    a, la, _ = run_sim(name, seed=3, index=2)
    b, lb, _ = run_sim(name, seed=3, index=2)
    assert a == b
    assert la["tree"] == lb["tree"] and la["generated_tokens"] == lb["generated_tokens"]


@pytest.mark.parametrize("name", TREE_STRATEGIES)
def test_tiny_budgets_end_cleanly(name: str) -> None:
    for budget in (1, 7, 60):
        answer, ledger, sim = run_sim(name, budget, max_tokens=64)
        assert ledger["spent"] <= budget and ledger["generated_tokens"] == sim.generated_tokens
        assert all(s.num_tokens <= 64 for s in answer.samples)


@pytest.mark.parametrize("name", TREE_STRATEGIES)
def test_params_are_validated(name: str) -> None:
    cls = params_class(STRATEGIES.get(name))
    with pytest.raises(ValueError, match="max_tokens must be ≥ 1"):
        parse_params(cls, {"max_tokens": "0"})
    if name in ("beam", "dvts"):
        with pytest.raises(ValueError, match=r"n must be a multiple of width \(4\), got 6"):
            parse_params(cls, {"n": "6"})
    if name == "ets":
        with pytest.raises(ValueError, match=r"lambda_c must be in \[0, 1000\], got -1.0"):
            parse_params(cls, {"lambda_c": "-1"})
        with pytest.raises(ValueError, match=r"threshold must be in \[0, 2\], got 3.0"):
            parse_params(cls, {"threshold": "3"})
        with pytest.raises(ValueError, match="parameter kv_cost must be"):
            parse_params(cls, {"kv_cost": "bytes"})


@pytest.mark.parametrize("name", ["beam", "dvts"])
def test_with_one_step_allowed_the_first_iteration_is_the_last(name: str) -> None:
    answer, ledger, sim = run_sim(name, n=8, width=4, max_steps=1, policy={"p_intro": 1.0, "p_recheck": 1.0})
    assert len(sim.requests) == 1 and sim.requests[0]["stop"] == ()
    assert ledger["tree"]["nodes_per_depth"] == [8] and all(s.finish_reason == "stop" for s in answer.samples)


def test_ets_records_each_round_in_the_papers_terms() -> None:
    policy = {"p_intro": 1.0, "p_recheck": 0.8}
    ets, ets_ledger, _ = run_sim("ets", index=2, seed=2, policy=policy, n=16, verifier=ORACLE_03, lambda_c=4)
    rounds = ets.info["rounds"]
    assert rounds and len(rounds) == ets.info["ilp_rounds"]
    assert all(1 <= r["kept"] <= r["candidates"] and r["clusters"] <= r["candidates"] for r in rounds)
    tree = ets_ledger["tree"]
    assert [r["reference_kv"] for r in rounds] == tree["reference_kv_tokens_per_round"]
    assert tree["reference_kv_tokens"] == sum(r["reference_kv"] for r in rounds)
    _, rebase_ledger, _ = run_sim("rebase", index=2, seed=2, policy=policy, n=16, verifier=ORACLE_03)
    assert len(rebase_ledger["tree"]["reference_kv_tokens_per_round"]) >= 1  # REBASE is measured the same way


def test_ets_paper_preset_sets_the_reference_configuration() -> None:
    from ttscale.strategies.ets import ETSParams, paper_lambda_s

    p = ETSParams(preset="paper", n=64, lambda_s=9.0, kv_cost="tokens")
    assert (p.lambda_s, p.kv_cost, p.temperature, p.step_tokens, p.max_tokens) == (1.4, "nodes", 1.0, 256, 1024)
    assert ETSParams(preset="paper", n=16).lambda_s == 1.5
    assert paper_lambda_s(200) == 1.45 and paper_lambda_s(8) == 1.5
    assert ETSParams(preset="paper").lambda_s == ETSParams().lambda_s  # the width is known at run time only
    with pytest.raises(ValueError, match="preset must be none or paper"):
        ETSParams(preset="fast")  # type: ignore[arg-type]
