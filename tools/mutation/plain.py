"""Plain-file mutation (issue 45): mutants written into a staging copy as ordinary source, no mutmut trampoline.

mutmut switches its mutants on with a trampoline that imports ``mutmut`` at call time, so code that runs only in a
process that cannot import it (the sandbox's harness: ``_supervisor``, ``_isolation``, ``_hardening`` and
``_runner``'s ``run``/``_guarded`` run in a ``python -I -S`` child, which ttscale feeds their compiled source) can
never be switched on. Here each mutant is a whole copy of the file with one change, written over the file in a
staging copy of the repository laid out as installed (``ttscale/evals/...``); the module's tests then run there
(``pytest`` with that copy first on the path), and the mutant is killed (a test failed, or the tests could not
even be collected), survived (all passed) or timeout (the tests ran past ``timeout_multiplier`` x the clean run's
wall time + ``plain_timeout_constant`` seconds: a wall-clock limit, since the work happens in the sandbox's
children). The mutants are mutmut's own (``mutmut.mutation.file_mutation.create_mutations``: the same operators
and, per function, the same numbering, so names read ``ttscale.sandbox._supervisor.x_main__mutmut_7``); a
module's ``functions`` limits them to some functions and ``sample`` to a seeded random sample of that many.

Used by ``run.py`` for a module with ``mode = "plain"``, and by ``heldout.py`` for its staging copy.
"""

from __future__ import annotations

import difflib
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# Repository folder -> where the installed package puts it (pyproject's [tool.setuptools.package-dir]).
PACKAGE_DIRS = {"ttscale": "ttscale", "strategies": "ttscale/strategies", "verifiers": "ttscale/verifiers",
                "evals": "ttscale/evals"}
# Besides the packages: the folders tests read by path (benchmarks' scripts, docs, notebooks, tools) and the files
# pytest's configuration and the documentation tests read.
OTHER_DIRS = ("tests", "benchmarks", "docs", "notebooks", "tools")
TOP_FILES = ("pyproject.toml", "README.md", "Makefile")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", "results")


def installed_path(repo_path: str) -> str:
    """Where a repository file lies in the installed layout: ``strategies/mcts.py`` -> ``ttscale/strategies/mcts.py``;
    a script folder's file (``benchmarks/verdicts.py``) stays where it is (its tests find it by path)."""
    top, _, rest = repo_path.partition("/")
    return f"{PACKAGE_DIRS[top]}/{rest}" if top in PACKAGE_DIRS else repo_path


def dotted(repo_path: str) -> str:
    """The module's import name: ``strategies/mcts.py`` -> ``ttscale.strategies.mcts``; a script folder's file is
    imported by its own name (``benchmarks/verdicts.py`` -> ``verdicts``)."""
    top = repo_path.partition("/")[0]
    stem = installed_path(repo_path).removesuffix(".py").removesuffix("/__init__")
    return stem.replace("/", ".") if top in PACKAGE_DIRS else stem.rpartition("/")[2]


def build_copy(stage: Path, *, root: Path = ROOT) -> None:
    """A fresh copy of the repository at ``root`` in the installed layout (never the working tree itself)."""
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    for top, dest in PACKAGE_DIRS.items():
        if (root / top).is_dir():
            shutil.copytree(root / top, stage / dest, ignore=IGNORE, dirs_exist_ok=True)
    for folder in OTHER_DIRS:
        if (root / folder).is_dir():
            shutil.copytree(root / folder, stage / folder, ignore=IGNORE)
    for name in TOP_FILES:
        if (root / name).exists():
            shutil.copy2(root / name, stage / name)


def _owner_names(module) -> dict[int, str]:
    """id(function node) -> mutmut's mangled name (``x_run``, ``xǁClassǁmethod``) for every top-level function
    and method, as mutmut names its trampolines."""
    import libcst as cst
    from mutmut.mutation.trampoline_templates import mangle_function_name

    names = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            names[id(statement)] = mangle_function_name(name=statement.name.value, class_name=None)
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            for method in statement.body.body:
                if isinstance(method, cst.FunctionDef):
                    names[id(method)] = mangle_function_name(name=method.name.value, class_name=statement.name.value)
    return names


def make_mutants(repo_path: str, source: str, *, functions: tuple[str, ...] = ()) -> dict[str, dict[str, str]]:
    """mutmut's mutants of ``source``, each as the whole mutated file: name -> {"source", "diff"}.

    Numbered per function in mutmut's order (``<module>.x_<function>__mutmut_<n>``, from 1), so a name means the
    same mutant as in a mutmut run of the same source; ``functions`` keeps only those functions' (and methods')
    mutants. Mutations outside any function are skipped, as mutmut skips them.
    """
    from mutmut.configuration import config
    from mutmut.mutation.file_mutation import create_mutations, deep_replace

    # mutmut reads its settings (the do-not-mutate patterns: none here) from the current folder's pyproject.toml
    # once per process: load them from an empty one, so the repository's own settings play no part.
    with tempfile.TemporaryDirectory() as empty:
        Path(empty, "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["."]\n')
        cwd = Path.cwd()
        os.chdir(empty)
        try:
            config()
        finally:
            os.chdir(cwd)
    module, mutations, _classes, _functions = create_mutations(repo_path, source)
    owners = _owner_names(module)
    prefix = dotted(repo_path)
    counts: dict[str, int] = {}
    out = {}
    for mutation in mutations:
        owner = mutation.contained_by_top_level_function
        if owner is None or id(owner) not in owners:
            continue
        mangled = owners[id(owner)]
        counts[mangled] = counts.get(mangled, 0) + 1
        if functions and owner.name.value not in functions:
            continue
        mutated = deep_replace(module, mutation.original_node, mutation.mutated_node).code
        before = module.code_for_node(owner).splitlines(keepends=True)
        after = module.code_for_node(deep_replace(owner, mutation.original_node, mutation.mutated_node))
        diff = "".join(difflib.unified_diff(before, after.splitlines(keepends=True), "original", "mutant", n=2))
        out[f"{prefix}.{mangled}__mutmut_{counts[mangled]}"] = {"source": mutated, "diff": diff}
    return out


def mutant_order(name: str) -> tuple[str, int]:
    head, _, num = name.rpartition("__mutmut_")
    return (head, int(num) if num.isdigit() else 0)


def sample_names(names: list[str], *, size: int | None, seed: int) -> list[str]:
    """A seeded random sample of ``size`` names (all of them when size is None or not smaller), in mutmut's order."""
    ordered = sorted(names, key=mutant_order)
    if size is None or size >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, size), key=mutant_order)


# A mutant of the harness can aim its kill at the wrong processes (`_kill_leftovers` with `!=` for `==` kills every
# process it can see but its own children, and the tests run as root here): each test run gets its own pid namespace
# and /proc, so it can see, and kill, only what it started. `--kill-child`: when the run is killed, so is all of it.
CONFINE = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")


def run_tests(stage: Path, tests: list[str], pytest_args: list[str], *, timeout: float | None,
              confine: bool = True) -> tuple[str, float]:
    """pytest in the staging copy: ("killed" | "survived" | "timeout" | "no tests", wall seconds)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(stage)}
    start = time.monotonic()
    command = [*(CONFINE if confine else ()), sys.executable, "-m", "pytest", *tests, *pytest_args]
    # Its own session, so a timeout ends pytest and whatever it started (a hung sandbox child) at once.
    proc = subprocess.Popen(command, cwd=stage, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "timeout", time.monotonic() - start
    seconds = time.monotonic() - start
    if code == 0:
        return "survived", seconds
    # 5: pytest collected nothing (a wrong test list or -k filter): a configuration error, not a kill.
    return ("no tests" if code == 5 else "killed"), seconds


def run_plain(name: str, module: dict, settings: dict, stage_root: Path, tests: list[str], *,
              previous: dict | None = None, root: Path = ROOT) -> dict:
    """Every (or a sample of the) mutant of ``module['file']`` against ``tests``, ``max_children`` at a time, each
    worker in its own staging copy. Returns the result in run.py's shape, with "mode", "population", "sample".

    ``previous`` (an earlier result of the same module): its killed and timed-out mutants are kept as they were and
    only the others run again; tests were only added since, so a killed mutant stays killed (run.py's
    ``--survivors-only``, for the sandbox's slow tests)."""
    repo_path = module["file"]
    source = (root / repo_path).read_text()
    mutants = make_mutants(repo_path, source, functions=tuple(module.get("functions", ())))
    chosen = sample_names(list(mutants), size=module.get("sample"), seed=int(module.get("seed", 45)))
    results: dict[str, dict[str, str]] = {}
    old = (previous or {}).get("mutants", {})
    for mutant in chosen:
        if old.get(mutant, {}).get("status") in ("killed", "timeout"):
            results[mutant] = {"status": old[mutant]["status"]}
    again = [m for m in chosen if m not in results]
    workers = max(1, int(settings["max_children"]))
    stages: queue.Queue[Path] = queue.Queue()
    for i in range(workers):
        build_copy(stage_root / name / f"w{i}", root=root)
        stages.put(stage_root / name / f"w{i}")
    target = installed_path(repo_path)
    pytest_args = list(settings["pytest_args"])
    clean_status, clean = run_tests(stage_root / name / "w0", tests, pytest_args, timeout=None)
    if clean_status == "killed":  # once more: a wall-clock test can fail on a loaded machine (then it is noise)
        print(f"   {name}: the tests failed on the unmutated copy; once more", flush=True)
        clean_status, clean = run_tests(stage_root / name / "w0", tests, pytest_args, timeout=None)
    if clean_status != "survived":
        raise SystemExit(f"{name}: the tests fail ({clean_status}) on the unmutated copy in {stage_root / name}/w0")
    timeout = float(settings["timeout_multiplier"]) * clean + float(settings.get("plain_timeout_constant", 30.0))
    print(f"   {name}: {len(chosen)} of {len(mutants)} mutants ({len(again)} to run), clean run {clean:.0f} s, "
          f"limit {timeout:.0f} s", flush=True)

    def one(mutant: str) -> tuple[str, str]:
        stage = stages.get()
        try:
            (stage / target).write_text(mutants[mutant]["source"])
            status, _ = run_tests(stage, tests, pytest_args, timeout=timeout)
            if status == "killed" and module.get("confirm_kills"):
                # A kill must repeat: on a loaded machine a test with a wall-clock limit (the sandbox's hostile
                # corpus) can fail once on its own, and would count an equivalent mutant killed.
                status, _ = run_tests(stage, tests, pytest_args, timeout=timeout)
        finally:
            (stage / target).write_text(source)
            stages.put(stage)
        return mutant, status

    with ThreadPoolExecutor(workers) as pool:
        for done, (mutant, status) in enumerate(pool.map(one, again), 1):
            if status == "no tests":
                raise SystemExit(f"{name}: pytest collected no tests for {mutant}: check the module's tests")
            results[mutant] = {"status": status}
            if status not in ("killed", "timeout"):
                results[mutant]["diff"] = mutants[mutant]["diff"]
            print(f"   [{done}/{len(again)}] {mutant}: {status}", flush=True)
    results = {m: results[m] for m in chosen}
    return {"mode": "plain", "population": len(mutants), "sample": len(chosen),
            "seed": int(module.get("seed", 45)), "clean_seconds": round(clean, 1), "mutants": results}
