"""`ttscale.allocate` / `ttscale allocate` (ttscale/allocsearch/run.py, spaces.py): the shipped spaces as sweep
cells on the SIMULATOR (derived from pools where the sweep can, live where not, each once; a resumed search asks
the engine for nothing), the agent proposer on the simulator and on the real embedded model, one-line refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ttscale
from ttscale.allocsearch.agent import REASONING_CHARS, reply_regex
from ttscale.allocsearch.run import AGENT_TOKENS
from ttscale.allocsearch.spaces import beam_study, genrm_study, sleep_time_study
from ttscale.testing.policy import SimulatedArithmeticPolicy

GENRM = {"solutions": (1, 2, 4), "verifications": (1, 2), "max_tokens": 32, "verify_tokens": 16}


def _cells(root: Path) -> dict[str, dict[str, Any]]:
    return {d.name: json.loads((d / "summary.json").read_text()) for d in (root / "sweep" / "cells").iterdir()}


def test_genrm_search_reads_cells_from_one_pool_and_resumes_without_the_engine(tmp_path: Path) -> None:
    policy = SimulatedArithmeticPolicy(seed=0)
    out = tmp_path / "search"
    result = ttscale.allocate(space="genrm", seeds=(0, 1), trials=3, limit=6, engine=policy, out=out,
                              settings=GENRM, total_budget=256)
    table = result.table
    space = genrm_study(total_budget=256, **GENRM).space
    assert table.points == len(space.points()) == 5  # S=4, V=2 costs 4·32 + 8·17 = 264 > 256: left out
    assert [r.label for r in table.rows] == ["grid", "random", "bayesian", "agent"]
    cells = _cells(out)
    assert len(cells) == 6  # the five allocations and the pool they are read from (S=4, V=2: the largest)
    assert any(s.get("derived_from") for s in cells.values())  # read from the stored pool, not generated again
    truth = [json.loads(line) for line in (out / "searches" / "truth" / "trials.jsonl").read_text().splitlines()]
    assert len(truth) == 5 and max(t["accuracy"] for t in truth) == table.optimum.accuracy
    # AgentTTS starts from its rule (each stage in turn at the most the budget leaves it: n=4, then
    # verifications=2), asking nothing; then the simulator answers arithmetic, not JSON: the first iteration's
    # replies are invalid, counted, and its one candidate falls back.
    agent = next(r for r in table.rows if r.label == "agent")
    assert agent.invalid > 0 and agent.fallbacks == 2  # one per seed
    agent_trials = [json.loads(line) for line in (out / "searches" / "agent-s0" / "trials.jsonl").read_text()
                    .splitlines()]
    assert [t["allocation"] for t in agent_trials[:2]] == [{"n": 4, "verifications": 1}, {"n": 1, "verifications": 2}]
    assert [t["fallback"] for t in agent_trials] == [False, False, True] and agent_trials[2]["invalid_proposals"] == 3
    saved = json.loads((out / "table.json").read_text())
    asked = len(policy.requests)
    again = SimulatedArithmeticPolicy(seed=0)
    resumed = ttscale.allocate(space="genrm", seeds=(0, 1), trials=3, limit=6, engine=again, out=out,
                               settings=GENRM, total_budget=256)
    assert not again.requests and asked > 0  # every cell and trial read back
    assert resumed.table.to_dict() == saved
    # The report shows the search: its table (with the agent's counted rejections) and the trials curve.
    text = ttscale.report(out)
    assert "## Allocation search: genrm" in text and "| agent | 2 |" in text
    assert f"grid optimum n={table.optimum.allocation['n']}" in text
    html = ttscale.report(out, format="html")
    assert "Allocation searches" in html and html.count("<svg") >= 2  # its chart beside the leaderboard's


def test_sleep_time_space_derives_test_budgets_and_amortises_sleep(tmp_path: Path) -> None:
    policy = SimulatedArithmeticPolicy(seed=1)
    settings = {"sleep": (0, 40), "budgets": (32, 64, 128), "queries": 3, "max_tokens": 32}
    result = ttscale.allocate(space="sleep_time", proposers=("grid", "random"), seeds=(0,), trials=4, limit=6,
                              engine=policy, out=tmp_path / "s", settings=settings, total_budget=100,
                              task="arithmetic_stateful:1", task_options={"queries": 3})
    assert result.table.points == len(sleep_time_study(total_budget=100, **settings).space.points()) == 4
    cells = _cells(tmp_path / "s")
    live = [name for name, s in cells.items() if not s.get("derived_from")]
    assert len(live) == 2  # one pool per sleep budget, at the largest test-time budget
    truth = [json.loads(line) for line in (tmp_path / "s" / "searches" / "truth" / "trials.jsonl").read_text()
             .splitlines()]
    records = {name: [json.loads(line) for line in (tmp_path / "s" / "sweep" / "cells" / name / "results.jsonl")
                      .read_text().splitlines()] for name in cells}
    # Per cell, per query (records are appended as they finish: keyed by their id).
    spent = {name: [(r["ledger"]["generated_tokens"], r["ledger"]["sleep_tokens_amortised"])
                    for r in sorted(rs, key=lambda r: r["id"])] for name, rs in records.items()}
    for name, summary in cells.items():
        source = summary.get("derived_from")
        sleep = 40 if "sleep_tokens=40" in name else 0
        budget = int(name.rsplit("-b", 1)[1].split("-")[0])
        # Each query's test-time tokens fit its budget; its share of the context's sleep is at most 40 / 3
        # (the context's thought may end early) and more than nothing when it slept, exactly 0 when not.
        assert all(0 < g <= budget for g, _ in spent[name])
        assert all((0 < a <= 40 / 3 + 1e-3) if sleep else a == 0 for _, a in spent[name])
        if source:  # a smaller budget read from the pool: the same contexts, so the same sleep, paid once
            assert [a for _, a in spent[name]] == [a for _, a in spent[source]]
            assert all(g <= h for (g, _), (h, _) in zip(spent[name], spent[source], strict=True))
    # The measured cost per query: the mean of test-time tokens plus the amortised sleep tokens of its cell.
    for t in truth:
        budget, sleep = t["allocation"]["budget"], t["allocation"]["sleep_tokens"]
        (name,) = [n for n in cells if f"sleep_tokens={sleep}-" in n and n.endswith(f"-b{budget}-s0")]
        assert t["cost"] == pytest.approx(sum(g + a for g, a in spent[name]) / len(spent[name]))


def test_beam_space_runs_each_cell_live_once(tmp_path: Path) -> None:
    policy = SimulatedArithmeticPolicy(seed=2)
    settings = {"beams": (4, 8), "steps": (2, 3), "step_tokens": 24}
    result = ttscale.allocate(space="beam", proposers=("random",), seeds=(0, 1), trials=2, limit=3, engine=policy,
                              out=tmp_path / "b", settings=settings, total_budget=8 * 3 * 24)
    assert result.table.points == len(beam_study(total_budget=576, **settings).space.points()) == 4
    cells = _cells(tmp_path / "b")
    assert len(cells) == 4 and not any(s.get("derived_from") for s in cells.values())  # beam: no replay
    assert all(s["max_generated_tokens"] <= 576 for s in cells.values())


def test_refusals_are_one_line_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="space must be one of genrm, sleep_time, beam, grm, got 'tree'"):
        ttscale.allocate(space="tree", engine=SimulatedArithmeticPolicy(), out=tmp_path / "x")
    with pytest.raises(ValueError, match="among grid, random, bayesian, agent, agent_single, got oracle"):
        ttscale.allocate(space="genrm", proposers=("oracle",), engine=SimulatedArithmeticPolicy(), out=tmp_path / "x")
    with pytest.raises(ValueError, match="no allocation costs at most the total budget 10"):
        ttscale.allocate(space="genrm", total_budget=10, engine=SimulatedArithmeticPolicy(), out=tmp_path / "x")
    # A setting's values are refused under the setting's own name (the strategy parameter it sets beside it).
    for settings, said in (({"solutions": (1, 1)}, "setting 'solutions' (dimension 'n') lists the value 1 twice"),
                           ({"steps": ()}, "setting 'steps' (dimension 'max_steps') needs at least one value")):
        space = "beam" if "steps" in settings else "genrm"
        with pytest.raises(ValueError) as refused:
            ttscale.allocate(space=space, settings=settings, engine=SimulatedArithmeticPolicy(), out=tmp_path / "x")
        assert str(refused.value) == said
    assert not (tmp_path / "x").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty and not an allocation search"):
        ttscale.allocate(space="genrm", settings=GENRM, total_budget=256, engine=SimulatedArithmeticPolicy(),
                         out=other, limit=2)
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    done = subprocess.run([sys.executable, "-m", "ttscale.cli", "allocate", "--space", "genrm", "--setting",
                           "bogus=3"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "has no setting 'bogus'" in done.stderr


def test_the_default_reply_cap_holds_the_longest_reply_the_shape_allows() -> None:
    # A generated token writes at least one character, so a reply of at most AGENT_TOKENS characters is never cut
    # before its allocation: the longest reasoning and the longest values of every shipped space fit.
    import re

    for study in (genrm_study(), beam_study(), sleep_time_study()):
        space = study.space
        longest = {d.name: max(d.values, key=lambda v: len(json.dumps(v))) for d in space.dimensions}
        reply = json.dumps({"reasoning": "x" * REASONING_CHARS, "allocation": longest}, separators=(",", ":"))
        assert re.fullmatch(reply_regex(space), reply), reply
        assert len(reply) <= AGENT_TOKENS, (len(reply), AGENT_TOKENS)


@pytest.mark.slow
def test_the_agents_on_the_real_embedded_model_propose_within_the_space(api_engine: Any, tmp_path: Path) -> None:
    """Real engine (the session's): the 135M model proposes for itself, its generation constrained to the reply's
    JSON shape (`reply_regex`), so the one-at-a-time agent's first reply is read as it is, whatever it reasons; the
    last allocation is no choice and is taken without asking. Then AgentTTS's loop runs its first iteration."""
    settings = {"solutions": (1, 2), "verifications": (1,), "max_tokens": 24, "verify_tokens": 8}
    result = ttscale.allocate(space="genrm", proposers=("agent_single",), seeds=(0,), trials=2, limit=2,
                              engine=api_engine, out=tmp_path / "a", settings=settings, total_budget=80,
                              agent_tokens=AGENT_TOKENS)
    trials = [json.loads(line) for line in (tmp_path / "a" / "searches" / "agent_single-s0" / "trials.jsonl")
              .read_text().splitlines()]
    assert len(trials) == 2 and result.agent_tokens > 0
    # Both allocations are within the budget: a reply of the constrained shape, uncut, is a valid proposal at the
    # first try. The default reply cap holds the longest reply the shape allows (a token writes at least one
    # character: 300 of reasoning and the JSON around it); 128 did not (the seeded sample of e655594 wrote 300
    # characters of "{S:14, * 1} ..." in about as many tokens and was cut before its allocation).
    assert not trials[0]["fallback"] and trials[0]["invalid_proposals"] == 0 and trials[0]["reasoning"] is not None
    assert trials[1]["reasoning"] == "the only allocation not yet tried"
    assert {tuple(sorted(t["allocation"].items())) for t in trials} == {(("n", 1), ("verifications", 1)),
                                                                         (("n", 2), ("verifications", 1))}
    # AgentTTS's loop on the same model: the rule-based start (n=8, then the cheapest point) asks nothing; the
    # first iteration asks for an insight in free text and for candidates in the constrained list shape.
    settings = {**settings, "solutions": (1, 2, 4, 8)}
    loop = ttscale.allocate(space="genrm", proposers=("agent",), seeds=(0,), trials=3, limit=2, engine=api_engine,
                            out=tmp_path / "b", settings=settings, total_budget=280, agent_tokens=128)
    steps = [json.loads(line) for line in (tmp_path / "b" / "searches" / "agent-s0" / "trials.jsonl").read_text()
             .splitlines()]
    assert [t["allocation"]["n"] for t in steps[:2]] == [8, 1] and loop.agent_tokens > 0
    assert steps[2]["allocation"]["n"] in (2, 4) and steps[2]["reasoning"].startswith("iteration 1")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--space", "genrm", "--setting", "solutions=0,1"],
         "its cell `genrm max_tokens=128 n=0 verifications=1 verify_tokens=64` (budget 2048) cannot run: n must be"),
        (["--space", "sleep_time"], "sleep_time"),
        (["--space", "genrm", "--task-option", "per_level=NaN"], "per_level must be an integer ≥ 1, got nan"),
    ],
)
def test_every_setting_is_checked_before_the_engine_starts_and_a_refusal_leaves_nothing(
    flags: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Issue 43: these were refused by the first cell, after the engine's start (30 s and vLLM's chatter), and the
    # allocate.json left behind refused the corrected command ("holds another allocation search").
    import ttscale.engine
    from ttscale.cli import main

    starts: list[Any] = []

    async def start_engine(config: Any) -> Any:
        starts.append(config)
        return SimulatedArithmeticPolicy(seed=0)

    monkeypatch.setattr(ttscale.engine, "start_engine", start_engine)
    out = tmp_path / "search"
    common = ["allocate", "--proposer", "grid", "--seeds", "0", "--trials", "1", "--limit", "2", "--out", str(out)]
    assert main([*common, *flags]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ttscale: error: allocate: ") and message in lines[0], lines
    assert not starts and not out.exists()
    # The corrected command runs in the same directory.
    corrected = ["--space", "genrm", "--setting", "solutions=1,2", "--setting", "verifications=1",
                 "--setting", "max_tokens=16", "--setting", "verify_tokens=8", "--total-budget", "256"]
    assert main([*common, *corrected]) == 0
    assert len(starts) == 1 and (out / "allocate.json").is_file() and (out / "table.json").is_file()


def test_a_search_refused_on_a_shared_engine_writes_nothing(tmp_path: Path) -> None:
    policy = SimulatedArithmeticPolicy(seed=0)
    with pytest.raises(ValueError, match="n must be"):
        ttscale.allocate(space="genrm", settings={**GENRM, "solutions": (0, 1)}, total_budget=256, engine=policy,
                         out=tmp_path / "x", limit=2, proposers=("grid",), seeds=(0,), trials=1)
    assert not (tmp_path / "x").exists() and not policy.requests
