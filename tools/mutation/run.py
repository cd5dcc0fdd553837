"""Mutation testing of ttscale's core modules with mutmut 3 (issue 34): `make mutation [MODULES="budget ..."]`.

mutmut imports each mutant under the dotted name of its file's path (``evals/metrics.py`` -> ``evals.metrics``),
but pyproject maps ``ttscale.evals``, ``ttscale.verifiers`` and ``ttscale.strategies`` onto the repository's
top-level folders, so mutants of those files would never be switched on. This script therefore builds a
staging copy with the installed layout (``ttscale/evals/...``), runs mutmut there (one module at a time, only
that module's file mutated, against only that module's fast tests), and never writes into the repository's
source folders. Per-module results go to ``tools/mutation/results/<module>.json`` and the report,
``tools/mutation/REPORT.md``, is rebuilt from all of them, with the mutants listed in ``equivalent.toml``
(equivalent ones, and cosmetic text excluded on purpose) counted apart. A script folder's module
(``benchmarks/verdicts.py``, which its siblings import as ``verdicts``) is staged as ``src/verdicts.py``, the
folder copied beside it; a module's ``unreachable`` functions (code that runs only in a process mutmut's switch
cannot follow, such as the sandbox's ``python -I -S`` child) are counted apart too, not scored. A module with
``mode = "plain"`` is mutated without mutmut's switch (``plain.py``: each mutant written into a staging copy as
plain source), which reaches that child; its results have the same shape.

Usage: python tools/mutation/run.py [--report-only] [--baseline] [--survivors-only] [--max-children N] [--stage DIR]
       [--save-partial SECONDS] [MODULE ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from plain import mutant_order, run_plain

from ttscale.stats.proportions import wilson_interval

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser from PyPI
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = HERE / "results"
# Repository folder -> where the installed package puts it (pyproject's [tool.setuptools.package-dir]).
PACKAGE_DIRS = {"ttscale": "ttscale", "strategies": "ttscale/strategies", "verifiers": "ttscale/verifiers",
                "evals": "ttscale/evals"}
# A mutant that makes its tests hang past the CPU-time limit is detected too.
KILLED = ("killed", "timeout")
#: The tests written to kill surviving mutants; `--baseline` runs without them (the BEFORE scores).
MUTATION_TESTS = "tests/mutation/"
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")


def load_config() -> dict:
    with open(HERE / "config.toml", "rb") as f:
        return tomllib.load(f)


def staged_path(repo_path: str) -> str:
    top, _, rest = repo_path.partition("/")
    if top not in PACKAGE_DIRS:
        # A script folder (benchmarks/): its modules import each other as top-level modules (`import verdicts`),
        # so the mutated one is staged under src/, which mutmut puts on sys.path and names without the prefix.
        return f"src/{rest}"
    return f"{PACKAGE_DIRS[top]}/{rest}"


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(x) for x in items) + "]"


def build_stage(stage: Path, module: dict, settings: dict, tests: list[str], *, refresh: bool = False) -> None:
    """The staging copy for `module` (see the module doc). `refresh`: keep an earlier run's stage and its mutants
    (their results stand), bringing only today's tests and settings into it (`--survivors-only`)."""
    top, _, rest = module["file"].partition("/")
    source_paths = ["ttscale"] + (["src"] if top not in PACKAGE_DIRS else [])
    if refresh:
        for where in (stage / "tests", stage / "mutants" / "tests"):
            shutil.copytree(ROOT / "tests", where, ignore=IGNORE, dirs_exist_ok=True)
        # Which tests reach which function, collected again: mutmut collects a new test's coverage, but not that of
        # a test edited since (one that now reaches a function it did not).
        (stage / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    else:
        if stage.exists():
            shutil.rmtree(stage)
        stage.mkdir(parents=True)
        for top_dir, dest in PACKAGE_DIRS.items():
            shutil.copytree(ROOT / top_dir, stage / dest, ignore=IGNORE, dirs_exist_ok=True)
        shutil.copytree(ROOT / "tests", stage / "tests", ignore=IGNORE)
        if top not in PACKAGE_DIRS:
            # The folder without the mutated file (the tests' own sys.path entry must not find the original first).
            shutil.copytree(ROOT / top, stage / top, ignore=shutil.ignore_patterns(rest, "__pycache__", "*.pyc"))
            (stage / "src").mkdir()
            shutil.copy2(ROOT / module["file"], stage / staged_path(module["file"]))
    # mutmut runs the tests inside its mutants/ copy: the script folder goes there too (the tests find it by path),
    # and so do the folders a module's tests read by path (`also_copy` in config.toml: test_power.py imports
    # benchmarks/power.py's experiments).
    also_copy = [top] if top not in PACKAGE_DIRS else []
    for folder in module.get("also_copy", []):
        if folder not in also_copy:
            if not refresh:
                shutil.copytree(ROOT / folder, stage / folder, ignore=IGNORE, dirs_exist_ok=True)
            also_copy.append(folder)
    with open(ROOT / "pyproject.toml", "rb") as f:
        pytest_ini = tomllib.load(f)["tool"]["pytest"]["ini_options"]
    text = f"""[tool.pytest.ini_options]
addopts = {json.dumps(pytest_ini.get("addopts", ""))}
pythonpath = {toml_list(pytest_ini.get("pythonpath", []))}
testpaths = {toml_list(pytest_ini.get("testpaths", []))}
markers = {toml_list(pytest_ini.get("markers", []))}

[tool.mutmut]
source_paths = {toml_list(source_paths)}
only_mutate = [{json.dumps(staged_path(module["file"]))}]
pytest_add_cli_args_test_selection = {toml_list(tests)}
pytest_add_cli_args = {toml_list(settings["pytest_args"])}
timeout_multiplier = {float(settings["timeout_multiplier"])}
timeout_constant = {float(settings["timeout_constant"])}
use_git_change_detection = false
also_copy = {toml_list(also_copy)}
"""
    (stage / "pyproject.toml").write_text(text)
    if refresh:
        (stage / "mutants" / "pyproject.toml").write_text(text)


def collect(stage: Path, out: Path) -> None:
    """Runs inside the stage (a subprocess): mutmut's own view of the results, with each mutant's diff."""
    os.chdir(stage)
    from mutmut.__main__ import walk_mutatable_files
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    mutants = {}
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for name, code in data.exit_code_by_key.items():
            status = status_by_exit_code[code]
            entry = {"status": status}
            if status not in KILLED:
                entry["diff"] = get_diff_for_mutant(name, path=path)
            mutants[name] = entry
    out.write_text(json.dumps(mutants, indent=1, sort_keys=True))


def run_module(name: str, module: dict, settings: dict, stage_root: Path, *, baseline: bool = False,
               survivors_only: bool = False) -> dict | None:
    tests = [t for t in module["tests"] if (ROOT / t).exists() and not (baseline and t.startswith(MUTATION_TESTS))]
    stage = stage_root / name
    # Tests too sensitive to the machine's load for a niced run (their module's other tests still run).
    if module.get("pytest_k"):
        tests += ["-k", module["pytest_k"]]
    print(f"== {name}: {module['file']} against {' '.join(tests)}", flush=True)
    start = time.monotonic()
    if module.get("mode") == "plain":
        saved = (RESULTS / "before" if baseline else RESULTS) / f"{name}.json"
        previous = json.loads(saved.read_text()) if survivors_only and saved.exists() else None
        run = run_plain(name, module, settings, stage_root, tests, previous=previous)
        return save_result(name, module, tests, time.monotonic() - start, run, baseline=baseline)
    again: list[str] = []
    saved = RESULTS / f"{name}.json"
    if survivors_only and not baseline and (stage / "mutants").is_dir():
        # mutmut keeps every mutant's result in the stage: with names it runs only those again, against today's
        # tests (it collects the new tests' coverage first); the others' results stand. Without a saved result
        # (a run stopped before its end), it runs the mutants that have none yet. Only while the module's source
        # is the one the stage mutated.
        if (stage / staged_path(module["file"])).read_bytes() != (ROOT / module["file"]).read_bytes():
            raise SystemExit(f"{name}: {module['file']} changed since its stage was made: run it whole")
        if saved.exists():
            exclusions = load_exclusions()
            again = [m for m, v in json.loads(saved.read_text())["mutants"].items()
                     if v["status"] not in KILLED and m not in exclusions]
            if not again:
                print(f"   {name}: no survivors to run again", flush=True)
                return json.loads(saved.read_text())
        build_stage(stage, module, settings, tests, refresh=True)
    else:
        build_stage(stage, module, settings, tests)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(settings["max_children"]),
                           *again], cwd=stage, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.monotonic() - start
    (stage / "mutmut-run.log").write_text(proc.stdout)
    if proc.returncode != 0:
        print(proc.stdout[-4000:])
        print(f"   {name}: mutmut failed (exit {proc.returncode}); log: {stage / 'mutmut-run.log'}", flush=True)
        return None
    out = stage / "collected.json"
    subprocess.run([sys.executable, __file__, "--collect", str(stage), str(out)], check=True, cwd=stage)
    run = {"mutants": json.loads(out.read_text())}
    if again:  # this run's time is the survivors' alone: the whole run's is kept beside it
        first = json.loads(saved.read_text())
        run["survivors_run"] = {"mutants": len(again), "seconds": round(seconds, 1)}
        seconds = first["seconds"] + seconds
    return save_result(name, module, tests, seconds, run, baseline=baseline)


def save_partial(name: str, module: dict, stage_root: Path, seconds: float) -> dict:
    """What a mutmut run stopped before its end has checked, saved as the module's result (`--save-partial`): the
    mutants it never ran are left out and counted in `partial`. mutmut runs the mutants it estimates fastest first,
    so the checked ones are not a random sample of the file's: the report says so beside the score."""
    stage = stage_root / name
    out = stage / "collected.json"
    subprocess.run([sys.executable, __file__, "--collect", str(stage), str(out)], check=True, cwd=stage)
    mutants = json.loads(out.read_text())
    checked = {m: v for m, v in mutants.items() if v["status"] != "not checked"}
    tests = [t for t in module["tests"] if (ROOT / t).exists()] + (["-k", module["pytest_k"]]
                                                                     if module.get("pytest_k") else [])
    run: dict = {"mutants": checked}
    if len(checked) < len(mutants):
        run["partial"] = {"checked": len(checked), "total": len(mutants)}
    return save_result(name, module, tests, seconds, run, baseline=False)


def save_result(name: str, module: dict, tests: list[str], seconds: float, run: dict, *, baseline: bool) -> dict:
    result = {"module": name, "file": module["file"], "tests": tests,
              "seconds": round(seconds, 1), "date": dt.date.today().isoformat(), **run}
    results = RESULTS / "before" if baseline else RESULTS
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    counts = summarize(result, load_exclusions(), module.get("unreachable", ()))
    print(f"   {name}: {counts['killed']}/{counts['scored']} killed ({counts['score']:.1%}), "
          f"{counts['survived']} surviving, {counts['excluded']} listed as equivalent/cosmetic, {seconds:.0f} s",
          flush=True)
    return result


def load_exclusions() -> dict[str, dict]:
    """equivalent.toml: [[equivalent]] and [[cosmetic]] entries, each with mutant, reason."""
    path = HERE / "equivalent.toml"
    if not path.exists():
        return {}
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = {}
    for kind in ("equivalent", "cosmetic"):
        for entry in data.get(kind, []):
            out[entry["mutant"]] = {"kind": kind, "reason": entry["reason"]}
    return out


def function_of(name: str) -> str:
    """The mutated function's own name: `pkg.mod.x_run__mutmut_3` -> `run`, `...xǁLibcǁwords__mutmut_1` -> `words`."""
    head = name.rpartition("__mutmut_")[0].rpartition(".")[2]
    return head.rpartition("ǁ")[2] if "ǁ" in head else head.removeprefix("x_")


def summarize(result: dict, exclusions: dict[str, dict], unreachable: Sequence[str] = ()) -> dict:
    """Scores a module's run; mutants of the functions in `unreachable` (config.toml: code that runs only where
    mutmut's switch cannot follow, such as the sandbox's `python -I -S` child) are counted apart, not scored."""
    mutants = result["mutants"]
    away = {m for m in mutants if function_of(m) in unreachable}
    excluded = [m for m in mutants if m in exclusions and mutants[m]["status"] not in KILLED and m not in away]
    killed = sum(1 for m, v in mutants.items() if v["status"] in KILLED and m not in away)
    scored = len(mutants) - len(excluded) - len(away)
    survivors = [m for m, v in mutants.items() if v["status"] not in KILLED and m not in excluded and m not in away]
    return {"total": len(mutants), "killed": killed, "excluded": len(excluded), "scored": scored,
            "survived": len(survivors), "survivors": sorted(survivors, key=mutant_order),
            "excluded_names": sorted(excluded, key=mutant_order), "unreachable": len(away),
            "score": killed / scored if scored else 1.0, "raw": killed / len(mutants) if mutants else 1.0}


def write_report(config: dict) -> None:
    exclusions = load_exclusions()
    before_dir = RESULTS / "before"
    lines = ["# Mutation testing report", "",
             "Generated by `tools/mutation/run.py` (`make mutation`) from `tools/mutation/results/*.json`; mutmut 3,",
             "one module at a time against the fast tests listed in `tools/mutation/config.toml`.",
             "Score = killed / (mutants - those listed in `tools/mutation/equivalent.toml`); a plain-mode module",
             "scored on a seeded sample gives its score's 95% Wilson interval in brackets.", "",
             "| module | file | BEFORE killed/total | AFTER killed/scored | AFTER score | equivalent/cosmetic "
             "| surviving | run time |",
             "|---|---|---|---|---|---|---|---|"]
    details = []
    total_seconds = 0.0
    for name, module in config["modules"].items():
        path = RESULTS / f"{name}.json"
        before = ""
        if (before_dir / f"{name}.json").exists():
            b = summarize(json.loads((before_dir / f"{name}.json").read_text()), {})
            before = f"{b['killed']}/{b['total']} ({b['raw']:.1%})"
        if not path.exists():
            lines.append(f"| {name} | `{module['file']}` | {before} | not run | | | | |")
            continue
        result = json.loads(path.read_text())
        s = summarize(result, exclusions, module.get("unreachable", ()))
        total_seconds += result["seconds"]
        score = f"{s['score']:.1%}"
        sampled = result.get("mode") == "plain" and result["sample"] < result["population"]
        if sampled:  # a sample's score estimates the whole file's: with its 95% Wilson interval
            low, high = wilson_interval(s["killed"], s["scored"])
            score += f" [{low:.1%}, {high:.1%}]"
        if result.get("partial"):  # a run stopped before its end: the mutants it checked (fastest first)
            low, high = wilson_interval(s["killed"], s["scored"])
            score += (f" [{low:.1%}, {high:.1%}]; partial: {result['partial']['checked']} of "
                      f"{result['partial']['total']} mutants checked")
        lines.append(f"| {name} | `{module['file']}` | {before} | {s['killed']}/{s['scored']} | {score} "
                     f"| {s['excluded']} | {s['survived']} | {result['seconds']:.0f} s ({result['date']}) |")
        details += [f"## {name} (`{module['file']}`)", "",
                    f"Tests: {', '.join('`' + t + '`' for t in result['tests'])}.", ""]
        if result.get("mode") == "plain":
            sampled = (f"a seeded sample of {result['sample']} (seed {result['seed']}) of its {result['population']}"
                       if result["sample"] < result["population"] else f"all {result['population']}")
            only = f" of {', '.join(module['functions'])}" if module.get("functions") else ""
            details += [f"Plain mode (`tools/mutation/plain.py`, mutants written as source, no mutmut switch): "
                        f"{sampled} mutants{only}; the clean run took {result['clean_seconds']} s.", ""]
            if result["sample"] < result["population"]:
                low, high = wilson_interval(s["killed"], s["scored"])
                details += [f"Score on the sample: {s['killed']}/{s['scored']} = {s['score']:.1%}; the whole file's, "
                            f"at 95% (Wilson): [{low:.1%}, {high:.1%}].", ""]
        if result.get("partial"):
            details += [f"Partial: the run was stopped after {result['partial']['checked']} of its "
                        f"{result['partial']['total']} mutants (mutmut runs those it estimates fastest first, so "
                        "they are not a random sample of the file's); the score and its 95% Wilson interval are "
                        "theirs.", ""]
        if s["unreachable"]:
            details += [f"Not scored: {s['unreachable']} mutants of {', '.join(module['unreachable'])} "
                        f"({module.get('unreachable_reason', 'out of mutmut reach')}).", ""]
        if s["survivors"]:
            details += [f"### Surviving ({s['survived']})", ""]
            for m in s["survivors"]:
                entry = result["mutants"][m]
                details += [f"`{m}`: {entry['status']}", "", "```diff", entry.get("diff", "").strip(), "```", ""]
        if s["excluded_names"]:
            details += ["### Equivalent or cosmetic (not scored)", ""]
            for m in s["excluded_names"]:
                ex = exclusions[m]
                details += [f"`{m}` ({ex['kind']}): {ex['reason']}", "", "```diff",
                            result["mutants"][m].get("diff", "").strip(), "```", ""]
    lines += ["", f"Sum of the module run times: {total_seconds / 60:.1f} min.", ""]
    (HERE / "REPORT.md").write_text("\n".join(lines + details).rstrip() + "\n")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--collect":
        collect(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="module names from config.toml (default: all)")
    parser.add_argument("--report-only", action="store_true", help="rebuild REPORT.md from the saved results")
    parser.add_argument("--baseline", action="store_true",
                        help=f"without the tests under {MUTATION_TESTS}, into results/before/ (the BEFORE scores)")
    parser.add_argument("--survivors-only", action="store_true",
                        help="run again only the mutants the saved result has not killed (a mutmut module: in its "
                             "kept stage, against today's tests)")
    parser.add_argument("--save-partial", type=float, metavar="SECONDS", default=None,
                        help="save what a stopped mutmut run of each MODULE checked (its stage is kept), with the "
                             "SECONDS it ran, instead of running anything")
    parser.add_argument("--max-children", type=int, default=None,
                        help="mutmut's worker processes for this run (default: config.toml's max_children); 1 leaves "
                             "a core to other work on a shared 2-core machine")
    parser.add_argument("--stage", type=Path, default=Path(tempfile.gettempdir()) / "ttscale-mutation",
                        help="where the staging copies go (default: %(default)s)")
    args = parser.parse_args()
    config = load_config()
    if args.max_children is not None:
        if args.max_children < 1:
            raise SystemExit("--max-children must be at least 1")
        config["mutmut"]["max_children"] = args.max_children
    names = args.modules or list(config["modules"])
    unknown = [n for n in names if n not in config["modules"]]
    if unknown:
        raise SystemExit(f"unknown module(s) {unknown}; known: {', '.join(config['modules'])}")
    if args.save_partial is not None:
        for name in names:
            save_partial(name, config["modules"][name], args.stage, args.save_partial)
    elif not args.report_only:
        start = time.monotonic()
        failed = [name for name in names
                  if run_module(name, config["modules"][name], config["mutmut"], args.stage, baseline=args.baseline,
                             survivors_only=args.survivors_only)
                  is None]
        print(f"all done in {(time.monotonic() - start) / 60:.1f} min", flush=True)
        if failed:
            write_report(config)
            raise SystemExit(f"mutmut failed on {', '.join(failed)} (see the logs above)")
    write_report(config)
    print(f"report: {HERE / 'REPORT.md'}")


if __name__ == "__main__":
    main()
