"""A JSON-lines file of problems as a task (`--task jsonl:PATH`): a dataset task, or a stateful one.

Apart from `datasets` and `stateful` because it makes either: the stateful task is a dataset task, so this
module sits above both, and neither imports the other back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ttscale.evals.datasets import MATH_DEFAULTS, DatasetTask
from ttscale.evals.loading import DatasetSpec, read_jsonl
from ttscale.evals.stateful import StatefulDatasetTask


def jsonl_task(
    path: str | None = None,
    /,
    *,
    question_field: str | None = None,
    answer_field: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    stateful: bool = False,
) -> DatasetTask:
    """Any JSON-lines file of problems: `jsonl:PATH`, graded by `math_equal`, asked with `\\boxed{}`.

    Fields default to the first present of `question`/`problem`/`prompt` and
    `answer`/`final_answer`/`reference`/`target`; ids to `id`/`unique_id`, else the row number.
    A GSM8K-style answer (a solution ending in `#### N`) is reduced to N. `data_dir` is ignored
    (the path says where the file is); it is accepted so every task takes the same options.

    Stateful problems (sleep-time compute, `ttscale.evals.stateful`): when the first row has `context` and
    `query` fields, each row's are kept in `Problem.meta` (a row with no question field is asked as
    `context + " " + query`; an optional `context_id` field groups rows, else the context's text does);
    `stateful=True` splits the question of every row that states no context by `split_context`.
    """
    del data_dir
    if not path:
        raise ValueError("the jsonl task needs a file: --task jsonl:PATH")
    if not isinstance(stateful, bool):
        raise ValueError(f"stateful must be true or false, got {stateful!r}")
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValueError(f"jsonl: no such file: {file}")
    first = next(read_jsonl(file))[1]
    questions = ("question", "problem", "prompt")
    stated = "context" in first and "query" in first  # the question may then be absent: context + query
    if stated and not question_field:
        question_field = next((f for f in questions if f in first), "question")
    spec = DatasetSpec(
        name="jsonl",
        hub_path=None,
        question_field=question_field or _first_present(first, questions, file, "question"),
        answer_field=answer_field
        or _first_present(first, ("answer", "final_answer", "reference", "target"), file, "answer"),
        id_field=next((f for f in ("id", "unique_id") if f in first), None),
        level_field="level" if isinstance(first.get("level"), int) else None,
        reference_format="auto",
        param_defaults=MATH_DEFAULTS,  # asked as MATH is (a boxed answer): MATH's suggestions
    )
    if stateful or stated:
        return StatefulDatasetTask(spec, name="jsonl", path=file)
    return DatasetTask(spec, path=file)


def _first_present(row: dict[str, Any], names: tuple[str, ...], path: Path, kind: str) -> str:
    for name in names:
        if name in row:
            return name
    raise ValueError(
        f"{path}:1: no {kind} field (looked for {', '.join(names)}; fields: {', '.join(sorted(row))}); "
        f"name it with --{kind}-field"
    )
