"""The thinking block's delimiters come from the model where it has them: a real Hugging Face tokenizer with
Qwen3's `<think>`/`</think>` tokens and a chat template that opens the block (built locally from the embedded
model's tokenizer files, no download), beside the same tokenizer without them (the plain-text defaults)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ttscale.blocks.thinking import (
    PLAIN_CLOSE,
    PLAIN_OPEN,
    ThinkingParams,
    closing,
    finished_thinking,
    tally_phases,
    thinking_format,
    thought_length,
)
from ttscale.budget import Budget, Ledger
from ttscale.engine.base import HFTokenizerMixin
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.schema import Completion, Generation, SamplingParams

TASK = ArithmeticTask(levels=(1,), per_level=1)
#: Qwen3-like: the generation prompt opens the thinking block (as DeepSeek-R1 distills' templates do).
OPENING_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)
PLAIN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class _Tokenizer(HFTokenizerMixin):
    """The tokenizer half of the engine (all thinking_format reads), on a real Hugging Face tokenizer."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ttscale.engine.models import prepare_embedded

    target = tmp_path_factory.mktemp("tok") / "tok"
    shutil.copytree(prepare_embedded(), target, ignore=shutil.ignore_patterns("*.safetensors"))
    return target


def _tokenizer(folder: Path, *, think_tokens: bool, template: str) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    if think_tokens:
        added = tokenizer.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
        assert added == 2  # SmolLM2 had neither: the model now knows them as single tokens
    tokenizer.chat_template = template
    return tokenizer


def _context(tokenizer: Any) -> Context:
    engine: Any = _Tokenizer(tokenizer)
    return Context(problem=TASK.problems()[0], task=TASK, engine=engine, ledger=Ledger(Budget.parse(1000)))


def test_the_delimiters_come_from_the_models_tokens_and_template(folder: Path) -> None:
    tokenizer = _tokenizer(folder, think_tokens=True, template=OPENING_TEMPLATE)
    ctx = _context(tokenizer)
    assert len(ctx.engine.tokenize("</think>")) == 1  # the model's own token, not eight pieces of text
    fmt = thinking_format(ctx, ThinkingParams())
    # The template opened the block: nothing to add; it ends at the model's `</think>` token.
    assert (fmt.open, fmt.close) == ("", "</think>")
    # A template that does not open it: the model's `<think>` opens it.
    fmt = thinking_format(_context(_tokenizer(folder, think_tokens=True, template=PLAIN_TEMPLATE)), ThinkingParams())
    assert (fmt.open, fmt.close) == ("<think>\n", "</think>")
    # Explicit parameters win over the model's.
    fmt = thinking_format(ctx, ThinkingParams(think_open="<reason>", think_close="</reason>"))
    assert (fmt.open, fmt.close) == ("<reason>", "</reason>")


def test_without_the_tokens_the_delimiters_are_plain_text(folder: Path) -> None:
    ctx = _context(_tokenizer(folder, think_tokens=False, template=PLAIN_TEMPLATE))
    assert len(ctx.engine.tokenize("</think>")) > 1
    fmt = thinking_format(ctx, ThinkingParams())
    assert (fmt.open, fmt.close) == (PLAIN_OPEN, PLAIN_CLOSE) == ("<think>\n", "\n</think>\n")


def test_a_completion_is_split_at_the_models_end_of_thinking(folder: Path) -> None:
    tokenizer = _tokenizer(folder, think_tokens=True, template=OPENING_TEMPLATE)
    ctx = _context(tokenizer)
    fmt = thinking_format(ctx, ThinkingParams())
    thought, answer = ctx.engine.tokenize("I add 2 and 3.</think>"), ctx.engine.tokenize("\n\nThe answer is 5.")
    both = Completion(text="I add 2 and 3.</think>\n\nThe answer is 5.", token_ids=(*thought, *answer))
    assert thought[-1] == tokenizer.convert_tokens_to_ids("</think>")
    assert thought_length(ctx, fmt, both) == len(thought)
    # Cut while thinking (the template opened the block, no `</think>`): all of it is thinking.
    cut = Completion(text="I add 2", token_ids=tuple(ctx.engine.tokenize("I add 2")), finish_reason="length")
    assert thought_length(ctx, fmt, cut) == cut.num_tokens
    tally_phases(ctx, fmt, [both, cut])
    assert ctx.ledger.extra["thinking_tokens"] == len(thought) + cut.num_tokens
    assert ctx.ledger.extra["answer_tokens"] == len(answer)


def test_a_delimiter_closes_a_thought_on_a_line_of_its_own_with_no_newline_doubled() -> None:
    assert closing("I add 2", "</think>") == "\n</think>"  # s1: a newline before the end of a cut thought
    assert closing("I add 2\n", "</think>") == "</think>"  # ... unless the thought ends with one
    assert closing("I add 2", PLAIN_CLOSE) == PLAIN_CLOSE  # ... or the delimiter begins with one
    thought = "Okay, I think I have finished thinking."
    assert finished_thinking("...<think>\n", thought, "</think>") == thought + "\n</think>"
    assert finished_thinking("...<think>", thought, "</think>") == "\n" + thought + "\n</think>"
    assert finished_thinking("...<think>\n", thought, PLAIN_CLOSE) == thought + "\n</think>\n"


class _Recording(_Tokenizer):
    """The tokenizer, and a `generate` that keeps each prompt and answers "5"."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer)
        self.prompts: list[list[int]] = []

    async def generate(self, prompt: Any, params: SamplingParams, **kwargs: Any) -> Generation:
        self.prompts.append(list(prompt))
        answer = Completion(text="5", token_ids=tuple(self.tokenize("5")))
        return Generation(completions=(answer,) * params.n, prompt_tokens=len(prompt))


@pytest.mark.parametrize("template", [OPENING_TEMPLATE, PLAIN_TEMPLATE], ids=["template-opens", "model-token-opens"])
def test_no_thinking_prefills_the_papers_block_with_the_models_tokens(folder: Path, template: str) -> None:
    import asyncio

    from ttscale.strategies.no_thinking import NoThinkingParams, no_thinking

    tokenizer = _tokenizer(folder, think_tokens=True, template=template)
    engine = _Recording(tokenizer)
    ctx = Context(problem=TASK.problems()[0], task=TASK, engine=engine, ledger=Ledger(Budget.parse(1000)))  # type: ignore[arg-type]
    asyncio.run(no_thinking(ctx.problem, ctx, NoThinkingParams(n=1, answer_tokens=8)))
    [prompt] = engine.prompts
    # Ma et al. 2025: "<|beginning_of_thinking|>\nOkay, I think I have finished thinking.\n<|end_of_thinking|>".
    paper = "<|im_start|>assistant\n<think>\nOkay, I think I have finished thinking.\n</think>"
    assert tokenizer.decode(prompt).endswith(paper)
    assert prompt[-1] == tokenizer.convert_tokens_to_ids("</think>")  # the model's own token ends it
