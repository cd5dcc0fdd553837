"""README and the docs are tested: every fenced shell command and Python block of README.md and of each page of docs/
runs here, as written or shrunk by the switch (`TTSCALE_README_SMALL`, tests/readme_blocks.py), and what they say of
the CLI's help is what the help says.

Where each runs:
- commands that need only the CLI surface (parsing, checks, run directories, tables, resume, report, fit) run
  in-process through `ttscale.cli.main` on the SIMULATED arithmetic policy (`ttscale.testing.policy`, not a
  model): every engine a command starts is the simulator, so no engine time is spent;
- `make demo`'s command and the Python API block run on the real embedded model, on the session's shared engine
  (tests/conftest.py's `api_engine`): no engine start of their own;
- GPU-only and hub-only commands, and the two that set up or are the suite, are skipped by name below, with why.

Commands of one block run in order in one folder (a block's later commands read what its earlier ones wrote). A docs
page's commands are named with its path (`getting-started/using-it.1-1-source`, tests/readme_blocks.py).
"""

from __future__ import annotations

import ast
import fnmatch
import glob
import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.readme_blocks import (
    LIMIT,
    README,
    ROUTING,
    SMALL,
    Block,
    Command,
    blocks,
    commands,
    corpus,
    shrink,
    shrink_python,
)

REPO = README.parent

#: Commands not run, by name (fnmatch patterns), and why.
SKIP = {
    "ttscale.1-2-make-test": "the suite itself: `make test` runs this file",
    "getting-started/using-it.1-1-source": "a shell's activation; the suite runs in the venv already",
    "getting-started/using-it.1-9-ttscale-run":
        "needs a local model folder ~/models/Qwen2.5-1.5B-Instruct (hub-only here)",
    "how-to/sweep-fit-policy/thinking-budgets-on.1-*": "GPU-only: Qwen3-1.7B from the hub on vLLM's CUDA build",
    "how-to/served-model-and-ray/a-prm-beside.1-*":
        "GPU-only: Qwen2.5-Math-1.5B and a 7B PRM from the hub on one 80 GB GPU",
}
#: Commands that fail on this branch only because of an item another branch fixes (the lead removes the mark).
XFAIL = {
}
#: Commands run on the real embedded model (the session's engine); the rest run on the simulator.
REAL = {"ttscale.1-1-make-demo"}
#: Python blocks that are excerpts of a file (`...` bodies, names defined elsewhere): compiled and their imports
#: run, not executed.
EXCERPTS = {"how-to/extend/writing-a-strategy.1", "how-to/extend/writing-a-strategy.2",
            "how-to/extend/writing-a-strategy.3"}

SHELL = [block for block in blocks() if block.language == "bash"]
PYTHON = [block for block in blocks() if block.language == "python"]
COMMANDS = [(block, command) for block in SHELL for command in commands(block)]


def _declared(name: str, table: dict[str, str]) -> str | None:
    return next((why for pattern, why in table.items() if fnmatch.fnmatchcase(name, pattern)), None)


def _cases() -> Iterator[Any]:
    for block, command in COMMANDS:
        marks = []
        if why := _declared(command.name, SKIP):
            marks.append(pytest.mark.skip(reason=why))
        if why := _declared(command.name, XFAIL):
            marks.append(pytest.mark.xfail(reason=why, strict=True))
        if command.name in REAL:
            marks.append(pytest.mark.slow)
        yield pytest.param(block, command, id=command.name, marks=marks)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One working folder per block, made on first use, with the files README's commands name as the user's own."""
    return {}


def _folder(folders: dict[str, Path], block: Block, factory: pytest.TempPathFactory) -> Path:
    if block.section not in folders:
        folder = factory.mktemp(block.section.replace("/", "-"))  # a docs page's path is not a folder
        _users_files(folder)
        folders[block.section] = folder
    return folders[block.section]


def _users_files(folder: Path) -> None:
    """What the docs tell the user to have: HumanEval's file, and `my_tasks.jsonl` with the docs' own example line."""
    shared = REPO.parent / "shared" / "data"
    if (shared / "humaneval" / "HumanEval.jsonl.gz").is_file():
        shutil.copyfile(shared / "humaneval" / "HumanEval.jsonl.gz", folder / "HumanEval.jsonl.gz")
    (folder / "my_tasks.jsonl").write_text(json.dumps(_readme_code_task()) + "\n", encoding="utf-8")


def _readme_code_task() -> dict[str, Any]:
    """The `code_jsonl` line the docs show (wrapped over two lines there)."""
    found = re.search(r'`(\{"id": "add-1".*?\})`', corpus(), re.S)
    assert found, "README and the docs no longer show a code_jsonl example line"
    return json.loads(" ".join(found.group(1).split("\n")))  # type: ignore[no-any-return]


@contextmanager
def _simulated_engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every engine a command starts is the SIMULATED arithmetic policy (no model, no vLLM)."""
    import ttscale.engine
    from tests.adaptive.sim import SeededSimulator

    async def start_engine(config: Any) -> SeededSimulator:
        return SeededSimulator(seed=1)

    with monkeypatch.context() as patch:
        patch.setattr(ttscale.engine, "start_engine", start_engine)
        yield


@contextmanager
def _session_engine(monkeypatch: pytest.MonkeyPatch, engine: Any) -> Iterator[None]:
    """Runs, sweeps and compares without an engine of their own run on the session's (already started)."""
    import ttscale
    import ttscale.pipeline

    carry_out, sweep, compare = ttscale.pipeline.carry_out, ttscale.sweep, ttscale.compare

    def shared(call: Any) -> Any:
        def with_engine(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("engine") is None and kwargs.get("distributed") is None:
                kwargs["engine"] = engine
            return call(*args, **kwargs)
        return with_engine

    @contextmanager
    def one_engine(**settings: Any) -> Iterator[Any]:
        yield engine  # the block's own `with ttscale.Engine(...)`: the session's engine, left running

    with monkeypatch.context() as patch:
        patch.setattr(ttscale.pipeline, "carry_out", shared(carry_out))
        for name, call in (("run", ttscale.run), ("sweep", sweep), ("compare", compare)):
            patch.setattr(ttscale, name, shared(call))
        patch.setattr(ttscale, "Engine", one_engine)
        yield


def _argv(command: Command) -> list[str]:
    """The command as the shell would hand it over: `make demo` is the Makefile's command; globs expanded."""
    argv = command.argv
    if argv[:2] == ["make", "demo"]:
        argv = _makefile_demo()
    argv = shrink(argv, command.name)
    out = []
    for word in argv:
        out += sorted(glob.glob(word)) or [word] if any(c in word for c in "*?[") else [word]
    return out


def _makefile_demo() -> list[str]:
    recipe = re.search(r"^demo:.*\n\t\$\(VENV\)/bin/(ttscale .*)$", (REPO / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile's demo target is not one ttscale command"
    return recipe.group(1).split()


@pytest.mark.parametrize(("block", "command"), list(_cases()))
def test_readme_command(block: Block, command: Command, folders: dict[str, Path],
                        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest) -> None:
    from ttscale.cli import main

    where = f"{block.page} line {command.line}"
    assert command.argv[0] in ("ttscale", "make"), f"{where}: an unknown command {command.source}"
    monkeypatch.chdir(_folder(folders, block, tmp_path_factory))
    shared = REPO.parent / "shared" / "data"
    if shared.is_dir():  # a user's local copies (README: `--data-dir` or TTSCALE_DATA_DIR), never the hub
        monkeypatch.setenv("TTSCALE_DATA_DIR", str(shared))
    for key, value in command.env.items():
        monkeypatch.setenv(key, value)
    argv = _argv(command)
    if command.name in REAL:
        argv = _real_size(argv)
        engines = _session_engine(monkeypatch, request.getfixturevalue("api_engine"))
    else:
        engines = _simulated_engines(monkeypatch)
    with engines:
        code = main(argv[1:])
    err = capsys.readouterr().err
    assert code == 0, f"{where}: `{command.source}` exited {code}:\n{err[-2000:]}"
    assert "Traceback" not in err


def _real_size(argv: list[str]) -> list[str]:
    """On the real engine under the switch, a small budget as well (the demo's beam search at 8k runs 31 beams)."""
    if SMALL and "--budget" in argv:
        argv = list(argv)
        argv[argv.index("--budget") + 1] = "1k"
    return argv


def test_readme_tests_the_adaptive_policy_on_problems_its_sweep_never_saw(folders: dict[str, Path]) -> None:
    # Issue 49: README's example ran the learned policy on the problems it was learned from, with no word of it.
    from ttscale.evals import load_task

    if ROUTING not in folders:
        pytest.skip("the routing block did not run (run the whole file)")
    folder = folders[ROUTING]
    sweep = json.loads((folder / "sweeps" / "s1" / "sweep.json").read_text())["spec"]
    runs = [json.loads(c.read_text()) for c in sorted((folder / "runs").glob("*/config.json"))]
    adaptive = [c["spec"] for c in runs if c["spec"]["strategy"] == "adaptive"]
    assert len(adaptive) == 2
    seen = {p.question for p in load_task(sweep["task"], **sweep["task_options"]).problems()[: sweep["limit"]]}
    for spec in adaptive:
        asked = load_task(spec["task"], **(spec["task_options"] or {})).problems()[: spec["limit"]]
        assert not seen & {p.question for p in asked}


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in PYTHON if b.section not in EXCERPTS], ids=lambda b: b.section)
def test_readme_python_block(block: Block, api_engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = shrink_python(block.text)
    with _session_engine(monkeypatch, api_engine):
        namespace: dict[str, Any] = {"__name__": "__main__"}
        exec(compile(source, f"{block.page}:{block.line}", "exec"), namespace)
    assert (tmp_path / "report.html").is_file() and len(namespace["frame"]) > 0


@pytest.mark.parametrize("block", [b for b in PYTHON if b.section in EXCERPTS], ids=lambda b: b.section)
def test_readme_excerpt_compiles_and_its_imports_exist(block: Block) -> None:
    tree = ast.parse(block.text, f"{block.page}:{block.line}")
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    exec(compile(ast.Module(body=imports, type_ignores=[]), block.page, "exec"), {})


def test_every_declared_name_is_a_readme_command() -> None:
    # A renamed or moved command must not leave a skip or an expected failure behind that covers nothing.
    names = [command.name for _, command in COMMANDS]
    for table in (SKIP, XFAIL):
        for pattern in table:
            assert any(fnmatch.fnmatchcase(name, pattern) for name in names), f"{pattern} names no documented command"
    assert set(names) >= REAL and {block.section for block in PYTHON} >= EXCERPTS
    assert LIMIT >= 1 and len(COMMANDS) > 20


def test_readme_names_the_intervals_compare_computes() -> None:
    from ttscale.comparisons.paired import ACCURACY_INTERVAL, COST_INTERVAL

    text = " ".join(corpus().split())
    assert f"Accuracy differences get {ACCURACY_INTERVAL}" in text and f"Cost ratios get {COST_INTERVAL}" in text


def test_readme_lists_every_task_and_where_its_local_copy_goes() -> None:
    from ttscale.evals import LOCAL_COPIES, TASKS

    text = corpus()
    items = re.findall(r"^- (.*(?:\n  .*)*)", text, re.M)  # each list item with its continuation lines
    tasks = " ".join(item for item in items if item.startswith("**Tasks**"))
    assert not [name for name in TASKS.names() if f"`{name}" not in tasks]
    assert not [path for path in LOCAL_COPIES.values() if f"DIR/{path}" not in text]
