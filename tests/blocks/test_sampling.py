"""The sample pool (ttscale.blocks.sampling): log-probs asked for must come back (issue 43, item 5).

Best-of-N without a verifier ranks its samples by their mean token log-prob. A server that returns none scored
every sample None: the run answered nothing, reported accuracy 0.0 and exited 0 with no word of why.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import ttscale
from ttscale.blocks.sampling import MissingLogprobsError, require_logprobs
from ttscale.engine.base import EngineFatalError
from ttscale.schema import Completion, Generation, SamplingParams
from ttscale.testing import SimulatedArithmeticPolicy


class WithoutLogprobs(SimulatedArithmeticPolicy):
    """The simulated policy behind a server that drops what it was asked for: every log-prob, or (`top_only`) the
    top alternatives of each token."""

    def __init__(self, *, top_only: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self.top_only = top_only

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        generation = await super().generate(prompt, params, seed=seed)
        dropped = {"top_logprobs": None, "confidences": None} | ({} if self.top_only else {"logprobs": None})
        return replace(generation, completions=tuple(replace(c, **dropped) for c in generation.completions))


@pytest.mark.parametrize(
    ("strategy", "params", "top_only"),
    [("best_of_n", {"n": "4", "max_tokens": "48"}, False),
     ("deepconf", {"n": "4", "max_tokens": "48", "top_k": "5"}, True)],
)
def test_a_strategy_that_scores_by_log_probs_stops_at_the_first_answer_without_them(
    tmp_path: Path, strategy: str, params: dict[str, str], top_only: bool
) -> None:
    engine = WithoutLogprobs(seed=0, top_only=top_only)
    out = tmp_path / "run"
    with pytest.raises(MissingLogprobsError, match=r"^the engine answered without the (top )?log-probs it was asked "
                                                   r"for, and this strategy scores its samples by them: use a backend"):
        ttscale.run(strategy=strategy, budget="400", task="arithmetic:1", limit=4, params=params, engine=engine,
                    out=out, progress=False)
    # It stops the run rather than recording a problem answered with nothing: no problem counts as finished.
    assert isinstance(MissingLogprobsError("x"), EngineFatalError)
    results = out / "results.jsonl"
    assert not results.exists() or results.read_text() == ""


def test_a_strategy_that_asks_for_no_log_probs_runs_on_such_an_engine(tmp_path: Path) -> None:
    for strategy, params in (("self_consistency", {"n": "2", "max_tokens": "48"}),
                             ("best_of_n", {"n": "2", "max_tokens": "48", "verifier": "noisy_oracle"})):
        run = ttscale.run(strategy=strategy, budget="400", task="arithmetic:1", limit=2, params=params,
                          engine=WithoutLogprobs(seed=0), out=tmp_path / strategy, progress=False)
        assert run.summary["problems"] == 2 and run.summary["errors"] == 0


def test_a_sample_without_tokens_needs_no_log_probs() -> None:
    empty = Completion(text="", token_ids=(), logprobs=None)
    require_logprobs([empty], top=True)  # nothing was generated: nothing to score, nothing missing
    with pytest.raises(MissingLogprobsError, match="without the top log-probs"):
        require_logprobs([Completion(text="4", token_ids=(7,), logprobs=(-0.1,))], top=True)
    require_logprobs([Completion(text="4", token_ids=(7,), logprobs=(-0.1,))])
