"""The `prm` verifier end to end on vLLM's pooling runner, with a tiny random-weight PRM built here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.verifiers.tiny_prm import STEP_TAG, build_tiny_prm
from ttscale.budget import Budget, Ledger
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.verifiers.prm import PRM

TASK = ArithmeticTask(levels=(1,), per_level=1)


@pytest.fixture(scope="module")
def prm(sync_engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PRM]:
    from ttscale.engine.models import prepare_embedded

    folder = build_tiny_prm(tmp_path_factory.mktemp("tiny_prm"), tokenizer_dir=prepare_embedded())
    verifier = PRM(model=str(folder), step_tag=STEP_TAG, max_model_len=1024)
    sync_engine.loop.run(verifier.start())
    yield verifier
    sync_engine.loop.run(verifier.close())


def context(sync_engine: Any, budget: str = "1k") -> Context:
    problem = TASK.problems()[0]
    return Context(problem=problem, task=TASK, engine=sync_engine.engine, ledger=Ledger(Budget.parse(budget)))


@pytest.mark.slow
def test_one_score_per_step_tag_in_unit_range(sync_engine: Any, prm: PRM) -> None:
    ctx = context(sync_engine)
    candidates = [["3 + 4 = 7", "The answer is 7."], ["3 + 4 = 8"], ["a", "b", "c"]]
    scores = sync_engine.loop.run(prm.score_steps(ctx, candidates))
    assert [len(s) for s in scores] == [2, 1, 3]
    assert all(0.0 <= x <= 1.0 for row in scores for x in row)
    assert len({x for row in scores for x in row}) > 1  # random weights still tell inputs apart


@pytest.mark.slow
def test_prm_scores_are_metered_as_verifier_prompt_tokens(sync_engine: Any, prm: PRM) -> None:
    ctx = context(sync_engine)
    sync_engine.loop.run(prm.score_steps(ctx, [["x = 1", "y = 2"], ["z = 3"]]))
    verifier = ctx.ledger.usage["verifier"]
    assert verifier.calls == 2 and verifier.prompt_tokens > 20 and verifier.generated_tokens == 0
    assert ctx.ledger.spent == 0  # a token budget counts generated tokens; scoring generates none
    sync_engine.loop.run(prm.score_steps(ctx, [["x = 1", "y = 2"]]))
    assert verifier.calls == 2  # a path already scored for this problem is not sent again


@pytest.mark.slow
def test_a_step_containing_the_tag_does_not_shift_scores(sync_engine: Any, prm: PRM) -> None:
    ctx = context(sync_engine)
    [scores] = sync_engine.loop.run(prm.score_steps(ctx, [[f"evil {STEP_TAG} step", "next"]]))
    # The tag inside a step is written as a space: the PRM reads the same text as for "evil   step", so the
    # two scores are that text's, not the scores at a tag the model wrote (which would shift them).
    [plain] = sync_engine.loop.run(prm.score_steps(context(sync_engine), [["evil   step", "next"]]))
    assert len(scores) == 2 and scores == plain and scores != [prm.default] * 2  # not the "cut past a tag" fallback


@pytest.mark.slow
def test_outcome_scores_and_bad_step_tag(sync_engine: Any, prm: PRM) -> None:
    ctx = context(sync_engine)
    outcome = sync_engine.loop.run(prm.score_outcomes(ctx, ["3 + 4 = 7", "3 + 4 = 9"]))
    assert len(outcome) == 2 and all(0.0 <= x <= 1.0 for x in outcome)
    bad = PRM(model=prm.model, step_tag="two tokens")
    with pytest.raises(ValueError, match="must be one token"):
        sync_engine.loop.run(bad.start())


@pytest.mark.slow
def test_a_finished_solution_is_scored_step_by_step_and_aggregated(sync_engine: Any, prm: PRM) -> None:
    from dataclasses import replace

    ctx = context(sync_engine)
    solution = "3 + 4 = 7\n\nThen 7 + 1 = 8\n\nThe answer is 8."
    [steps] = sync_engine.loop.run(prm.score_steps(ctx, [["3 + 4 = 7", "Then 7 + 1 = 8", "The answer is 8."]]))
    assert len(steps) == 3
    expected = {"last": steps[-1], "min": min(steps), "prod": steps[0] * steps[1] * steps[2], "mean": sum(steps) / 3}
    for rule, value in expected.items():
        ranked = replace(prm, aggregate=rule)  # shares the started engine and the per-problem cache
        [outcome] = sync_engine.loop.run(ranked.score_outcomes(ctx, [solution]))
        assert outcome == pytest.approx(value), rule


class _FixedSteps(PRM):
    """The PRM with its step scores given by hand (what a real PRM returns is tested above)."""

    async def score_steps(self, ctx: Any, candidates: Any) -> list[list[float]]:
        table = {("a", "b", "c"): [0.9, 0.2, 0.8], ("d",): [0.5]}
        return [table[tuple(c)] for c in candidates]


@pytest.mark.parametrize(
    ("rule", "ranks"), [("last", [0.8, 0.5]), ("min", [0.2, 0.5]), ("prod", [0.144, 0.5]), ("mean", [19 / 30, 0.5])]
)
def test_outcome_rules_on_a_hand_example(rule: str, ranks: list[float]) -> None:
    import asyncio

    prm = _FixedSteps(model="unused", aggregate=rule, delimiter="\\n")  # type: ignore[arg-type]
    scores = asyncio.run(prm.score_outcomes(None, ["a\nb\n\nc\n", "d"]))  # type: ignore[arg-type]
    assert scores == pytest.approx(ranks)  # under `last` the 3-step solution ranks first (0.8), under `min` last


def test_prm_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="aggregate must be one of last, min, prod, mean"):
        PRM(model="x", aggregate="max")  # type: ignore[arg-type]


def test_prm_engine_args_are_typed_by_vllms_fields_without_an_engine() -> None:
    pytest.importorskip("vllm")  # reads vLLM's AsyncEngineArgs dataclass; starts nothing
    config = PRM(model="x", max_model_len=2048,
                 engine_args="max-num-seqs=64; kv_cache_dtype=fp8;max_num_batched_tokens=4096;").engine_config()
    assert config.runner == "pooling" and config.max_model_len == 2048
    assert config.max_num_seqs == 64  # an EngineConfig field: set, and typed as an int
    assert config.engine_args == {"kv_cache_dtype": "fp8", "max_num_batched_tokens": 4096}
    assert PRM(model="x").engine_config().engine_args == {}


@pytest.mark.parametrize(
    ("engine_args", "expected"),
    [
        ("max_num_seq=64", "'max_num_seq' is not an engine argument of the installed vLLM; the closest are "
                           "max_num_seqs"),
        ("max_num_seqs=64;quantisation=fp8", "'quantisation' is not an engine argument of the installed vLLM; "
                                             "the closest are quantization"),
        ("max_num_seqs=lots", "engine argument max_num_seqs='lots': expected int"),
        ("max_num_seqs", "engine arguments look like KEY=VALUE, got 'max_num_seqs'"),
    ],
)
def test_a_bad_prm_engine_argument_is_named_in_one_line(engine_args: str, expected: str) -> None:
    pytest.importorskip("vllm")
    from ttscale.engine.args import EngineArgError

    with pytest.raises(EngineArgError) as caught:
        PRM(model="x", engine_args=engine_args).engine_config()
    assert expected in str(caught.value) and "\n" not in str(caught.value)
