"""The held-out check (issue 45): hand-written one-line mutants, each against the fast tests that mention its module.

mutmut's operators are mechanical; a reviewer's guess at a real bug (an off-by-one, a flipped comparison, a dropped
copy, a swapped min/max, a limit read from the wrong key) is not always among them, and tests written to kill
mutmut's survivors can still miss it. ``heldout.toml`` lists such mutants, written from the modules' source only
(not from mutmut's survivors, not after reading the modules' tests): each names a file, the exact text of one line
to change (``find``, which must occur exactly once in the file), its replacement and why a real bug could look like
it. Each is applied to a staging copy of the repository laid out as installed (``plain.py``; never the working
tree) and the fast tests that mention its module run there: every test file under ``tests/`` that imports it
(``ttscale.stats.paired`` or ``from ttscale.stats import paired``; a benchmark script's module by its name), and for
a file ``config.toml`` mutates in plain mode (the sandbox's harness, which runs only in its child and which tests
reach through executions, not imports) the tests listed there. A mutant is killed when a test fails (or the tests
run past ``timeout`` seconds); the rest survive. ``--survivors-of`` runs again only an earlier run's survivors. A
mutant with ``equivalent = "..."`` (why no input a run can be given tells it apart) is still checked against its file
but not run, and is counted apart, as ``equivalent.toml`` does for mutmut's.

Usage: python tools/mutation/heldout.py [--list FILE] [--stage DIR] [--json OUT] [FILE_SUBSTRING ...]
"""

from __future__ import annotations

import argparse
import json
import queue
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from plain import ROOT, build_copy, dotted, installed_path, run_tests

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser from PyPI
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
PYTEST_ARGS = ["-x", "-q", "-p", "no:cacheprovider", "-m", "not slow"]


class ListError(ValueError):
    """A mutant list that cannot be applied as written (one line for the user, no traceback)."""


def load_list(path: Path, *, root: Path = ROOT) -> tuple[list[dict], dict]:
    """The mutants of ``path`` ([[mutant]] tables: file, find, replace, why) and its settings; each checked against
    the file it names: ``find`` must occur exactly once and differ from ``replace``."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    mutants = data.get("mutant", [])
    if not mutants:
        raise ListError(f"{path}: no [[mutant]] entries")
    for i, m in enumerate(mutants, 1):
        missing = [k for k in ("file", "find", "replace", "why") if not m.get(k)]
        if missing:
            raise ListError(f"{path}: mutant {i} lacks {', '.join(missing)} (each needs file, find, replace, why)")
        source = root / m["file"]
        if not source.is_file():
            raise ListError(f"{path}: mutant {i}: no file {m['file']} in {root}")
        count = source.read_text().count(m["find"])
        if count != 1:
            raise ListError(f"{path}: mutant {i}: `{m['find']}` occurs {count} times in {m['file']}, must occur once")
        if m["find"] == m["replace"] or "\n" in m["find"] or "\n" in m["replace"]:
            raise ListError(f"{path}: mutant {i}: find and replace must differ and be one line each")
        if "equivalent" in m and not (isinstance(m["equivalent"], str) and m["equivalent"].strip()):
            raise ListError(f"{path}: mutant {i}: equivalent must say why no input tells it apart")
    return mutants, {k: v for k, v in data.items() if k != "mutant"}


def mentioning(repo_path: str, *, root: Path = ROOT) -> list[str]:
    """The test files under tests/ that import the module of ``repo_path``, sorted."""
    name = dotted(repo_path)
    parent, _, leaf = name.rpartition(".")
    if parent:
        patterns = [re.escape(name) + r"\b", rf"from {re.escape(parent)} import [^\n]*\b{re.escape(leaf)}\b"]
    else:  # a benchmark script's module: imported by its own name, or by path (`_benchmark("verdicts")`)
        patterns = [rf"\bimport {re.escape(name)}\b", rf"\(\s*[\"']{re.escape(name)}[\"']\s*\)"]
    found = re.compile("|".join(patterns))
    tests = [str(p.relative_to(root)) for p in (root / "tests").rglob("test_*.py") if found.search(p.read_text())]
    # The module's own test files first (test_<leaf>.py, test_<leaf>_mutants.py): with -x, a mutant they kill
    # ends the run before the other files start.
    own = leaf.lstrip("_") or name
    return sorted(tests, key=lambda t: (own not in Path(t).name, t))


def tests_for(repo_path: str, config: dict, *, root: Path = ROOT) -> list[str]:
    """``mentioning``, and for a file config.toml mutates in plain mode (code that runs only in the sandbox's child,
    which no test imports: the tests reach it through executions) the tests listed there; where neither gives any,
    the tests config.toml lists for the file in any mode."""
    tests = mentioning(repo_path, root=root)
    modules = [m for m in config.get("modules", {}).values() if m["file"] == repo_path]
    listed = [t for m in modules if m.get("mode") == "plain" or not tests for t in m["tests"] if (root / t).exists()]
    tests += [t for t in dict.fromkeys(listed) if t not in tests]
    if tests:
        return tests
    raise ListError(f"no test under tests/ imports {dotted(repo_path)} and config.toml lists no tests for {repo_path}")


def run_list(mutants: list[dict], settings: dict, config: dict, *, stage_root: Path, workers: int = 2,
             root: Path = ROOT) -> list[dict]:
    """Apply each mutant in a staging copy and run its tests; returns one row per mutant, in the list's order."""
    timeout = float(settings.get("timeout", 600))
    stages: queue.Queue[Path] = queue.Queue()
    for i in range(workers):
        build_copy(stage_root / f"w{i}", root=root)
        stages.put(stage_root / f"w{i}")
    plans = [(m, tests_for(m["file"], config, root=root)) for m in mutants]

    def one(plan: tuple[dict, list[str]]) -> dict:
        mutant, tests = plan
        stage = stages.get()
        target = stage / installed_path(mutant["file"])
        original = target.read_text()
        line = original[: original.index(mutant["find"])].count("\n") + 1
        try:
            target.write_text(original.replace(mutant["find"], mutant["replace"], 1))
            # A mutant of the sandbox runs in its own pid namespace (see plain.CONFINE); the rest need none.
            status, seconds = run_tests(stage, tests, PYTEST_ARGS, timeout=timeout,
                                        confine=mutant["file"].startswith("ttscale/sandbox/"))
        finally:
            target.write_text(original)
            stages.put(stage)
        return {**mutant, "line": line, "tests": tests, "status": status, "seconds": round(seconds, 1)}

    rows = []
    with ThreadPoolExecutor(workers) as pool:
        for row in pool.map(one, plans):
            mark = "killed" if row["status"] in ("killed", "timeout") else row["status"].upper()
            print(f"{mark:9} {row['file']}:{row['line']}  {row['find'].strip()} -> {row['replace'].strip()}  "
                  f"({row['seconds']:.0f} s, {len(row['tests'])} test files)", flush=True)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="run only the mutants whose file contains one of these")
    parser.add_argument("--list", type=Path, default=HERE / "heldout.toml", help="the mutants (default: %(default)s)")
    parser.add_argument("--stage", type=Path, default=Path(tempfile.gettempdir()) / "ttscale-heldout",
                        help="where the staging copies go (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="write every mutant's result here")
    parser.add_argument("--survivors-of", type=Path, metavar="JSON",
                        help="run again only the mutants an earlier --json left surviving (tests were only added)")
    parser.add_argument("--workers", type=int, default=2, help="test runs at a time (default: %(default)s)")
    args = parser.parse_args(argv)
    with open(HERE / "config.toml", "rb") as f:
        config = tomllib.load(f)
    try:
        mutants, settings = load_list(args.list)
        mutants = [m for m in mutants if not args.only or any(s in m["file"] for s in args.only)]
        if not mutants:
            raise ListError(f"no mutant's file contains any of {args.only}")
        start = time.monotonic()
        kept: list[dict] = []
        if args.survivors_of:
            earlier = {(r["file"], r["find"]): r for r in json.loads(args.survivors_of.read_text())}
            kept = [earlier[(m["file"], m["find"])] for m in mutants if (m["file"], m["find"]) in earlier
                    and earlier[(m["file"], m["find"])]["status"] in ("killed", "timeout")]
            done = {(r["file"], r["find"]) for r in kept}
            mutants = [m for m in mutants if (m["file"], m["find"]) not in done]
        # Equivalent mutants are not run: each keeps its reason, and is counted apart from the scored ones.
        apart = [{**m, "status": "equivalent"} for m in mutants if m.get("equivalent")]
        mutants = [m for m in mutants if not m.get("equivalent")]
        rows = kept + (run_list(mutants, settings, config, stage_root=args.stage, workers=max(1, args.workers))
                       if mutants else [])
    except ListError as error:
        print(f"heldout: {error}", file=sys.stderr)
        return 2
    if any(r["status"] == "no tests" for r in rows):
        print("heldout: pytest collected no tests for some mutants (marked NO TESTS)", file=sys.stderr)
        return 2
    killed = sum(r["status"] in ("killed", "timeout") for r in rows)
    for row in apart:
        print(f"{'equivalent':9} {row['file']}  {row['find'].strip()} -> {row['replace'].strip()}  "
              f"({row['equivalent']})", flush=True)
    print(f"held-out mutants killed: {killed}/{len(rows)} in {(time.monotonic() - start) / 60:.1f} min"
          + (f" ({len(apart)} equivalent, not run)" if apart else ""))
    if args.json:
        args.json.write_text(json.dumps(rows + apart, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
