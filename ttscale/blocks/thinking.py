"""What sequential strategies share: the thinking block of a reasoning model, its delimiters and its answer.

A reasoning model (Qwen3, DeepSeek-R1 distills) writes `<think> ... </think>` and then its answer. The
delimiters come from the model where it has them: a generation prompt that already opens `<think>` (the chat
template did it), or a tokenizer that knows `</think>` as one token. Elsewhere — the embedded SmolLM2, any
instruct model — they are plain-text parameters, so the mechanics (budgets, forced continuations, prefilled
thinking) run and are tested on any model. Every request goes through `ctx.generate` with its phase
(`thinking` or `answer`), so the ledger meters both and counts them apart; a request that thinks and answers
at once (a revision's attempt) is divided at the end of thinking (`tally_phases`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range
from ttscale.schema import Completion, SamplingParams
from ttscale.search.steps import unescape

AUTO = "auto"
#: Where a model has no thinking tokens: plain-text delimiters it can read and (rarely) write.
PLAIN_OPEN, PLAIN_CLOSE = "<think>\n", "\n</think>\n"


@dataclass(frozen=True, kw_only=True)
class ThinkingParams:
    """The thinking block's delimiters, the cue before the answer, and the sampling of both."""

    think_open: str = AUTO
    """Text that opens the thinking block; `auto` = none when the chat template opens it, else `<think>` (plain
    text `<think>\\n` when the tokenizer has no such token)."""
    think_close: str = AUTO
    """The end-of-thinking delimiter; `auto` = `</think>` where the tokenizer has it, else `\\n</think>\\n`."""
    answer_cue: str = "\\nFinal Answer: "
    """Text after the end of thinking that cues the answer (s1's cue); each strategy says when it is added."""
    answer_tokens: int = 256
    """Tokens of the answer segment at most (a MATH-style task suggests a whole solution's: `ttscale list --params
    NAME --task TASK`)."""
    temperature: float = 0.6
    """Sampling temperature of thinking and answer (Qwen3's recommendation for thinking)."""
    top_p: float = 0.95
    """Nucleus sampling mass."""

    def __post_init__(self) -> None:
        for name in ("think_open", "think_close", "answer_cue"):
            object.__setattr__(self, name, unescape(getattr(self, name)))
        if not self.think_close:
            raise ValueError("think_close must be a non-empty delimiter")
        check_positive("answer_tokens", self.answer_tokens)
        check_range("temperature", self.temperature, 0, 10)
        check_range("top_p", self.top_p, 0, 1, low_open=True)


@dataclass(frozen=True)
class ThinkingFormat:
    """The delimiters in force for one model."""

    open: str
    """Appended to the chat prompt to open the thinking ('' when the template opened it)."""
    close: str
    """Ends the thinking (a stop string of thinking requests)."""


def thinking_format(ctx: Context, p: ThinkingParams) -> ThinkingFormat:
    """Delimiters from the model where it has them, else the parameters' plain-text defaults."""
    rendered = ctx.engine.detokenize(ctx.prompt())
    opened = rendered.rstrip().endswith("<think>")
    has_tokens = len(ctx.engine.tokenize("</think>")) == 1
    close = p.think_close if p.think_close != AUTO else ("</think>" if has_tokens or opened else PLAIN_CLOSE)
    if p.think_open != AUTO:
        return ThinkingFormat(open=p.think_open, close=close)
    return ThinkingFormat(open="" if opened else ("<think>\n" if has_tokens else PLAIN_OPEN), close=close)


def thought_length(ctx: Context, fmt: ThinkingFormat, completion: Completion) -> int:
    """How many of `completion`'s leading tokens are thinking, for a request that lets the model think and answer.

    Through the end-of-thinking delimiter where the model wrote one; all of them where it was still thinking (the
    prompt opened the block, or its first words did, and it never closed it); none where it did not think.
    """
    ids = list(completion.token_ids)
    close = ctx.engine.tokenize(fmt.close)
    if len(close) == 1 and close[0] in ids:  # one token (Qwen3's </think>): found even where decoding drops it
        return ids.index(close[0]) + 1
    if fmt.close in completion.text:  # several tokens: the fewest leading tokens whose text holds it
        low, high = 1, len(ids)
        while low < high:
            mid = (low + high) // 2
            if fmt.close in ctx.engine.detokenize(ids[:mid]):
                high = mid
            else:
                low = mid + 1
        return low
    opener = fmt.open.strip()
    thinking = not opener or completion.text.lstrip().startswith(opener)
    return len(ids) if thinking else 0


def tally_phases(ctx: Context, fmt: ThinkingFormat, completions: Sequence[Completion]) -> None:
    """Count completions that hold both phases (thinking, then the answer) in the ledger's two phase counters.

    For requests that are not split into a thinking and an answer request (a revision's attempt): the tokens
    the engine returned, divided at the end of thinking, so `thinking_tokens + answer_tokens` is what it generated.
    """
    thought = sum(thought_length(ctx, fmt, c) for c in completions)
    ctx.ledger.tally("thinking_tokens", thought)
    ctx.ledger.tally("answer_tokens", sum(c.num_tokens for c in completions) - thought)


def sampling(p: ThinkingParams, *, max_tokens: int, stop: tuple[str, ...] = (), n: int = 1) -> SamplingParams:
    return SamplingParams(n=n, temperature=p.temperature, top_p=p.top_p, max_tokens=max_tokens, stop=stop)


def closing(thought: str, close: str) -> str:
    """The delimiter that ends `thought`, on a line of its own: a newline first unless the thought ends with one or
    the delimiter begins with one (the plain `\\n</think>\\n` does), as s1 closes a thought the budget cut."""
    return close if thought.endswith("\n") or close.startswith("\n") else "\n" + close


def finished_thinking(before: str, thought: str, close: str) -> str:
    """A prefilled thinking block after its opening (`before` is the text up to and with the opening delimiter):
    the thought on lines of its own and the delimiter, as NoThinking's "<|beginning_of_thinking|>\\nOkay, I think
    I have finished thinking.\\n<|end_of_thinking|>" (Ma et al. 2025, §3.1), with no newline doubled."""
    lead = "" if before.endswith("\n") or not before else "\n"
    return lead + thought + closing(thought, close)


async def answer_after(
    ctx: Context, p: ThinkingParams, prefix: list[int], *, n: int = 1, cue: bool = True
) -> list[Completion]:
    """The answer segment(s) after a closed thinking block: `prefix` ends with the delimiter; the answer cue is
    added where `cue` (s1 adds it only after a thinking the budget cut)."""
    prompt = prefix + ctx.engine.tokenize(p.answer_cue) if cue else list(prefix)
    generation = await ctx.generate(prompt, sampling(p, max_tokens=p.answer_tokens, n=n), phase="answer")
    return list(generation.completions)


__all__ = ["AUTO", "ThinkingFormat", "ThinkingParams", "answer_after", "closing", "finished_thinking", "sampling",
           "tally_phases", "thinking_format", "thought_length"]
