"""The public math benchmarks as tasks: `gsm8k`, `math500`, `aime24`, `aime25` (`jsonl:PATH` is `jsonl.py`).

Where the problems come from, first match wins:

1. the task's argument, `math500:PATH` (a data directory, or the `.jsonl` file itself);
2. `data_dir=` (the CLI's `--data-dir`), then the `TTSCALE_DATA_DIR` environment variable:
   the file is `<dir>/<name>/test.jsonl` (e.g. `<dir>/math500/test.jsonl`);
3. the Hugging Face hub through `datasets.load_dataset` (imported only then).

A local file that is missing, empty or malformed raises `ValueError` with one line naming the
file, the line and what was expected. Each task owns its prompt (chat messages) and its grader.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ttscale.answers.extract import Extraction, extract
from ttscale.evals.base import Message
from ttscale.evals.loading import DatasetSpec, read_jsonl, to_problems
from ttscale.schema import Problem

DATA_DIR_ENV = "TTSCALE_DATA_DIR"

GSM8K_INSTRUCTION = (
    "Solve the problem step by step. End with the final answer as a number on its own line, in the form '#### N'."
)


#: What a MATH-style benchmark suggests (`ttscale.kit.params.task_defaults`). search-and-learn's MATH-500 settings
#: (huggingface/search-and-learn, src/sal/config.py: max_tokens 2048, num_iterations 40) cap every step's request
#: at that same max_tokens (src/sal/search/beam_search.py `_beam_search`; diverse_verifier_tree_search.py: 2048),
#: so a step is cut only where the whole solution would be; GenRM's verification chains get 1024 tokens
#: (sc-genrm-scaling's MATH setting). The sequential strategies' answer is a whole solution too: NoThinking's
#: answer is the solution written after the prefilled thought (Ma et al. 2025, §3.1), and s1 caps its answer
#: only by max_gen_toks (32768, eval/commands.sh), leaving at least 100 tokens (vllm_causallms.py, thinking
#: `auto`); so `answer_tokens` is the solution's cap, not the arithmetic 256 that cut MATH answers short.
MATH_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("max_tokens", 2048), ("step_tokens", 2048), ("max_steps", 40), ("verify_tokens", 1024), ("answer_tokens", 2048),
)
#: Grade-school solutions are shorter: half of MATH's token cap (a step and an answer alike), the same depth.
GSM8K_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("max_tokens", 1024), ("step_tokens", 1024), ("max_steps", 40), ("verify_tokens", 1024), ("answer_tokens", 1024),
)
#: AIME's answers are longer: NoThinking's budget-controlled comparisons on its math sets, AIME among them, run
#: to about 3,500 tokens an answer (Ma et al. 2025, §3.3), past MATH's 2048, so an answer gets 4096; the search
#: settings stay search-and-learn's MATH ones (it ran no AIME).
AIME_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("max_tokens", 2048), ("step_tokens", 2048), ("max_steps", 40), ("verify_tokens", 1024), ("answer_tokens", 4096),
)

SPECS: dict[str, DatasetSpec] = {
    "gsm8k": DatasetSpec(
        name="gsm8k",
        hub_path="openai/gsm8k",
        hub_config="main",
        reference_format="gsm8k",
        instruction=GSM8K_INSTRUCTION,
        final_number=True,
        repair_escapes=True,
        param_defaults=GSM8K_DEFAULTS,
    ),
    "math500": DatasetSpec(
        name="math500",
        hub_path="HuggingFaceH4/MATH-500",
        question_field="problem",
        id_field="unique_id",
        level_field="level",
        meta_fields=("subject",),
        repair_escapes=True,
        param_defaults=MATH_DEFAULTS,
    ),
    "aime24": DatasetSpec(
        name="aime24",
        hub_path="HuggingFaceH4/aime_2024",
        hub_split="train",
        question_field="problem",
        id_field="id",
        meta_fields=("url",),
        grading="integer",
        repair_escapes=True,
        param_defaults=AIME_DEFAULTS,
    ),
    "aime25": DatasetSpec(
        name="aime25",
        hub_path="math-ai/aime25",
        question_field="problem",
        id_field="id",
        grading="integer",
        repair_escapes=True,
        param_defaults=AIME_DEFAULTS,
    ),
}


class DatasetTask:
    """A benchmark loaded from a local JSON-lines file or the hub (see the module docstring)."""

    def __init__(self, spec: DatasetSpec, *, path: Path | None = None, timeout: float = 5.0) -> None:
        if path is None and spec.hub_path is None:
            raise ValueError(f"{spec.name}: needs a local file")
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        self.spec = spec
        self.name = spec.name
        self.path = path
        self.timeout = timeout
        self._problems: list[Problem] | None = None
        self._sha256: str | None = None

    def problems(self) -> list[Problem]:
        if self._problems is None:
            rows = self._local_rows() if self.path is not None else self._hub_rows()
            self._problems = to_problems(self.spec, rows, where=str(self.path or self.spec.hub_path))
        return list(self._problems)

    def messages(self, problem: Problem) -> list[Message]:
        return [{"role": "user", "content": f"{problem.question}\n\n{self.spec.instruction}"}]

    def extract(self, text: str) -> str | None:
        return self.extraction(text).answer

    def extraction(self, text: str) -> Extraction:
        return extract(text, final_number=self.spec.final_number)

    def grade(self, prediction: str | None, problem: Problem) -> bool:
        if prediction is None:
            return False
        if self.spec.grading == "integer":
            pred, ref = _as_integer(prediction), _as_integer(problem.reference)
            if pred is not None and ref is not None:
                return pred == ref
        from ttscale.answers.grading import math_equal

        return math_equal(prediction, problem.reference, timeout=self.timeout)

    def param_defaults(self) -> dict[str, Any]:
        """Strategy parameters suggested for this benchmark (see `ttscale.kit.params.task_defaults`)."""
        return dict(self.spec.param_defaults)

    def config(self) -> dict[str, Any]:
        spec = self.spec
        source: dict[str, Any] = (
            {"path": str(self.path), "sha256": self._file_sha256()}
            if self.path is not None
            else {"hub": spec.hub_path, "hub_config": spec.hub_config, "split": spec.hub_split}
        )
        fields = {"question_field": spec.question_field, "answer_field": spec.answer_field}
        return {"name": self.name, **source, **fields, "problems": len(self.problems())}

    def _file_sha256(self) -> str:
        if self._sha256 is None:
            assert self.path is not None
            self._sha256 = hashlib.sha256(self.path.read_bytes()).hexdigest()
        return self._sha256

    def _local_rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        assert self.path is not None
        return read_jsonl(self.path)

    def _hub_rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        spec = self.spec
        where = f"{spec.hub_path} ({spec.hub_split} split)"
        hint = f"or point --data-dir at a local copy (<dir>/{spec.name}/test.jsonl)"
        try:
            import datasets
        except ImportError as exc:
            raise ValueError(f"{spec.name}: loading from the hub needs `pip install datasets`, {hint}") from exc
        try:
            table = datasets.load_dataset(spec.hub_path, spec.hub_config, split=spec.hub_split)
        except Exception as exc:  # offline, renamed, gated: say what to do instead
            message = " ".join(str(exc).split())[:200]
            raise ValueError(f"{spec.name}: could not load {where} ({type(exc).__name__}: {message}); {hint}") from exc
        return ((f"{where} row {i}", dict(row)) for i, row in enumerate(table))


# -- factories (registered in ttscale.TASKS) -----------------------------------------------------


def _factory(name: str, doc: str) -> Callable[..., DatasetTask]:
    """The registered factory of `SPECS[name]`: a local copy (`source`, `--data-dir`) or the hub, its fields
    renamed by option."""

    def factory(
        source: str | None = None,
        /,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        question_field: str | None = None,
        answer_field: str | None = None,
    ) -> DatasetTask:
        spec = SPECS[name]
        if question_field:
            spec = replace(spec, question_field=question_field)
        if answer_field:
            spec = replace(spec, answer_field=answer_field)
        return DatasetTask(spec, path=_local_file(name, source, data_dir))

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = doc
    return factory


gsm8k = _factory("gsm8k", "GSM8K test split (1,319 problems); references are the number after `#### `.")
math500 = _factory("math500", 'MATH-500 (the "Let\'s Verify Step by Step" test subset); levels 1-5, LaTeX references.')
aime24 = _factory("aime24", "AIME 2024 I and II (30 problems); integer answers 0-999.")
aime25 = _factory("aime25", "AIME 2025 I and II (30 problems); integer answers 0-999.")


def _local_file(name: str, source: str | None, data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The local file for task `name`, or None to use the hub; a named location must exist."""
    origins = (("argument", source), ("data_dir", data_dir), (DATA_DIR_ENV, os.environ.get(DATA_DIR_ENV)))
    return local_file(name, origins, files=("test.jsonl",))


def local_file(name: str, origins: Iterable[tuple[str, str | os.PathLike[str] | None]], *, files: tuple[str, ...],
               hint: str = "") -> Path | None:
    """The local copy of task `name` from the first location given in `origins` (`(origin, location)` pairs,
    None skipped): a file is read as that file; a folder must hold one of `files` in `<folder>/<name>/` or itself.
    None when no location is given (the hub). `hint` (where to get the file) closes the error for a missing one."""
    for origin, location in origins:
        if not location:
            continue
        base = Path(location).expanduser()
        if base.is_file():
            return base
        expected = " or ".join(f"<dir>/{name}/{f}" for f in files)
        if base.is_dir():
            for folder in (base / name, base):
                for file in files:
                    if (folder / file).is_file():
                        return folder / file
            raise ValueError(f"{name}: no {base / name / files[0]} (from {origin}; expected {expected}){hint}")
        # A path that is not there is named as given: the file it is meant to be (`humaneval:HumanEval.jsonl.gz`)
        # is not turned into a folder inside it.
        raise ValueError(f"{name}: no such file or folder: {base} (from {origin}; give the task's file, or a data "
                         f"folder: {expected}){hint}")
    return None


_INTEGER = re.compile(r"^\s*\$?\s*([-−+]?\d+)\s*\$?\s*\.?\s*$")


def _as_integer(text: str) -> int | None:
    match = _INTEGER.match(text)
    return int(match.group(1).replace("−", "-")) if match else None
