"""What the latency-model simulator (`ttscale.testing.latency`) writes: a SCRIPT drawn once per engine, no model.

Its pieces are drawn at the engine's start so that answering costs microseconds per sample: 4,096 arithmetic
steps (`"a + b = c\\n\\n"` padded with words; 40% state a wrong sum), as many answer lines, a table of random
log-probs, and (at first use) two tables of DeepConf token confidences, 3 ± 0.5 for a sample that states only
right sums and `confidence_drop` lower for one that states a wrong one. A sample's values are slices of the
tables at random offsets.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from functools import cached_property

from ttscale.engine.confidence import token_confidence
from ttscale.schema import Completion

EOS = 2
OFFSET = 3
"""Token id of a character: its code point + OFFSET (ids below it are special, EOS among them)."""
USER, ASSISTANT = "<|user|>", "<|assistant|>"
_WORDS = ("so", "we", "add", "the", "two", "numbers", "and", "carry", "one", "then", "check", "it")
_TABLE = 1 << 15


class Script:
    """Steps, answers and value tables drawn once: a sample is a few of them joined, so answering is cheap."""

    def __init__(self, rng: random.Random, *, step_tokens: int, seed: int, confidence_drop: float) -> None:
        self.steps: list[str] = []
        self.answers: list[str] = []
        self.wrong: set[str] = set()
        """The steps that state a wrong sum."""
        # 4,096 distinct steps: siblings rarely repeat one another, as sampled steps rarely do (a harness cost
        # that is paid per distinct text, such as ETS's embeddings, is not flattered by the script).
        for _ in range(4096):
            a, b = rng.randint(1, 99), rng.randint(1, 99)
            c = a + b if rng.random() < 0.6 else a + b + rng.choice((-10, -1, 1, 10))
            core = f"{a} + {b} = {c}"
            target = rng.randint(step_tokens // 2, step_tokens * 3 // 2)
            words: list[str] = []
            while len(core) + sum(len(w) + 1 for w in words) < target:
                words.append(rng.choice(_WORDS))
            self.steps.append(" ".join([*words, core]) + "\n\n")
            if c != a + b:
                self.wrong.add(self.steps[-1])
            self.answers.append(f"The answer is {c}.")
        self.logprob_table = tuple(-0.5 * rng.random() for _ in range(_TABLE))
        self.seed = seed
        self.confidence_drop = confidence_drop

    def noise(self, rng: random.Random, length: int) -> tuple[float, ...]:
        """`length` log-probs in (-0.5, 0]: a slice of one table drawn at start, at a random offset."""
        if length > _TABLE // 2:
            return tuple(-0.5 * rng.random() for _ in range(length))
        at = rng.randrange(_TABLE - length)
        return self.logprob_table[at : at + length]

    def states_wrong(self, steps: Sequence[str], length: int) -> bool:
        """Whether the first `length` characters of a sample made of `steps` state a wrong sum: a step states its
        sum just before its blank line (the answer line repeats a pool answer, no step's: it is left out)."""
        at = 0
        for step in steps:
            if at + len(step) - 2 > length:
                return False
            if step in self.wrong:
                return True
            at += len(step)
        return False

    def confidences(self, sure: random.Random, length: int, *, wrong: bool) -> tuple[float, ...]:
        """`length` token confidences: a slice of one of the two tables, at an offset drawn from `sure`."""
        if length > _TABLE // 2:
            return tuple(3.0 - self.confidence_drop * wrong + sure.uniform(-0.5, 0.5) for _ in range(length))
        at = sure.randrange(_TABLE - length)
        return self._confidence_tables[wrong][at : at + length]

    @cached_property
    def _confidence_tables(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        # Drawn at first use, from an RNG of their own: an engine never asked for them draws as it always did.
        draws = random.Random(f"confidence table {self.seed}")
        right = tuple(3.0 + draws.uniform(-0.5, 0.5) for _ in range(_TABLE))
        return right, tuple(c - self.confidence_drop for c in right)


def judge(rng: random.Random) -> Completion:
    # One token, as a judge asks for: "Y" / "N" (the char tokenizer has no one-token "Yes").
    p_yes = min(max(rng.random(), 1e-6), 1 - 1e-6)
    top = {"Y": math.log(p_yes), "N": math.log(1 - p_yes)}
    verdict = "Y" if p_yes >= 0.5 else "N"
    return Completion(text=verdict, token_ids=(ord(verdict) + OFFSET,), logprobs=(top[verdict],),
                      top_logprobs=(top,), finish_reason="length", confidences=(token_confidence(top.values()),))


def stop_len(text: str, at: int, stops: Sequence[str]) -> int:
    """The length of the longest stop string at `at` in `text` (0: none)."""
    return max((len(s) for s in stops if text.startswith(s, at)), default=0)


def first_stop(watch: Callable[[float], bool], confidences: Sequence[float], *, start: int = 0,
               end: int | None = None) -> int | None:
    """The first position in [start, end) that `watch` stops at (it sees each in order, until it stops)."""
    for i in range(start, len(confidences) if end is None else end):
        if watch(confidences[i]):
            return i
    return None
