"""The mutation tools themselves (issue 45): plain-file mutants (tools/mutation/plain.py) and the held-out check
(tools/mutation/heldout.py), on a tiny repository of their own so that each test takes about a second."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "mutation"
TINY = "def inc(x):\n    return x + 1\n\n\ndef dec(x):\n    return x - 1\n"
TINY_TEST = "from ttscale.tiny import inc\n\n\ndef test_inc():\n    assert inc(1) == 2\n"
PYPROJECT = '[tool.pytest.ini_options]\naddopts = "--import-mode=importlib"\npythonpath = ["."]\n'


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType]:
    """plain and heldout, imported as the scripts import each other (their folder first on sys.path)."""
    monkeypatch.syspath_prepend(str(TOOLS))
    for name in ("plain", "heldout"):
        monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    return importlib.import_module("plain"), importlib.import_module("heldout")


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    """A repository with one module (ttscale/tiny.py) and one test that checks inc but not dec."""
    root = tmp_path / "repo"
    (root / "ttscale").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "ttscale" / "__init__.py").write_text("")
    (root / "ttscale" / "tiny.py").write_text(TINY)
    (root / "tests" / "test_tiny.py").write_text(TINY_TEST)
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def test_plain_mutants_are_mutmuts_own_with_its_names(tools: tuple[ModuleType, ModuleType]) -> None:
    pytest.importorskip("mutmut", reason="mutmut is installed by `make mutation` (the `mutation` extra)")
    plain, _ = tools
    mutants = plain.make_mutants("ttscale/tiny.py", TINY)
    # mutmut mutates `x + 1` to `x - 1` and `x + 2` in inc, the mirror in dec: numbered per function from 1.
    assert sorted(mutants) == ["ttscale.tiny.x_dec__mutmut_1", "ttscale.tiny.x_dec__mutmut_2",
                               "ttscale.tiny.x_inc__mutmut_1", "ttscale.tiny.x_inc__mutmut_2"]
    inc_bodies = {ast.unparse(ast.parse(mutants[f"ttscale.tiny.x_inc__mutmut_{i}"]["source"]).body[0].body[0])
                  for i in (1, 2)}
    assert inc_bodies == {"return x - 1", "return x + 2"}
    for entry in mutants.values():  # a whole file with exactly one change, the other function as it was
        assert entry["source"] != TINY and entry["source"].count("\ndef ") == 1
        assert entry["diff"].startswith("--- original\n+++ mutant\n")
    only_dec = plain.make_mutants("ttscale/tiny.py", TINY, functions=("dec",))
    assert sorted(only_dec) == ["ttscale.tiny.x_dec__mutmut_1", "ttscale.tiny.x_dec__mutmut_2"]


def test_a_sample_is_seeded_and_in_mutmut_order(tools: tuple[ModuleType, ModuleType]) -> None:
    plain, _ = tools
    names = [f"m.x_f__mutmut_{i}" for i in range(1, 31)]
    first = plain.sample_names(names, size=5, seed=45)
    assert first == plain.sample_names(list(reversed(names)), size=5, seed=45)
    assert len(first) == 5 and first == sorted(first, key=plain.mutant_order) and set(first) <= set(names)
    assert first != plain.sample_names(names, size=5, seed=46)
    assert plain.sample_names(names, size=None, seed=45)[9] == "m.x_f__mutmut_10"  # numeric, not text, order


def test_heldout_runs_each_mutant_against_the_tests_that_import_its_module(
        tools: tuple[ModuleType, ModuleType], tiny_repo: Path, tmp_path: Path) -> None:
    _, heldout = tools
    listing = tmp_path / "heldout.toml"
    listing.write_text(
        '[[mutant]]\nfile = "ttscale/tiny.py"\nfind = "return x + 1"\nreplace = "return x + 2"\nwhy = "off by one"\n'
        '[[mutant]]\nfile = "ttscale/tiny.py"\nfind = "return x - 1"\nreplace = "return x - 2"\nwhy = "untested"\n')
    mutants, settings = heldout.load_list(listing, root=tiny_repo)
    assert heldout.mentioning("ttscale/tiny.py", root=tiny_repo) == ["tests/test_tiny.py"]
    rows = heldout.run_list(mutants, settings, {}, stage_root=tmp_path / "stage", workers=1, root=tiny_repo)
    assert [(r["line"], r["status"]) for r in rows] == [(2, "killed"), (6, "survived")]
    assert rows[0]["tests"] == ["tests/test_tiny.py"]
    assert (tiny_repo / "ttscale" / "tiny.py").read_text() == TINY  # the repository is never written to


EQUIVALENT_ENTRY = ('file = "ttscale/budget.py"\n'
                    'find = "ledger.reserved = max(0.0, ledger.reserved + amount)"\n'
                    'replace = "ledger.reserved = max(0.0, amount + ledger.reserved)"\nwhy = "operands swapped"')


def test_an_equivalent_mutant_is_counted_apart_with_its_reason_and_not_run(
        tools: tuple[ModuleType, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, heldout = tools
    listing, out = tmp_path / "heldout.toml", tmp_path / "out.json"
    listing.write_text(f'[[mutant]]\n{EQUIVALENT_ENTRY}\nequivalent = "float addition commutes"\n')
    assert heldout.main(["--list", str(listing), "--stage", str(tmp_path / "stage"), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "equivalent ttscale/budget.py" in printed and "(float addition commutes)" in printed
    assert printed.rstrip().endswith("(1 equivalent, not run)") and "killed: 0/0 in" in printed
    (row,) = json.loads(out.read_text())
    assert (row["status"], row["equivalent"]) == ("equivalent", "float addition commutes")
    assert not (tmp_path / "stage").exists()  # nothing to run: no staging copy either


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('file = "ttscale/budget.py"\nfind = "no such line anywhere"\nreplace = "x"\nwhy = "w"',
         "`no such line anywhere` occurs 0 times in ttscale/budget.py, must occur once"),
        ('file = "ttscale/budget.py"\nfind = "return"\nreplace = "x"\nwhy = "w"', "must occur once"),
        ('file = "ttscale/nothing.py"\nfind = "a"\nreplace = "b"\nwhy = "w"', "no file ttscale/nothing.py"),
        ('file = "ttscale/budget.py"\nfind = "a"\nreplace = "b"', "lacks why"),
        (f'{EQUIVALENT_ENTRY}\nequivalent = " "', "mutant 1: equivalent must say why no input tells it apart"),
    ],
    ids=["absent", "ambiguous", "no_file", "no_reason", "equivalent_without_reason"],
)
def test_a_list_that_cannot_be_applied_is_one_line_and_exit_2(
        tools: tuple[ModuleType, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        entry: str, message: str) -> None:
    _, heldout = tools
    listing = tmp_path / "bad.toml"
    listing.write_text(f"[[mutant]]\n{entry}\n")
    assert heldout.main(["--list", str(listing), "--stage", str(tmp_path / "stage")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("heldout: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "stage").exists()  # refused before anything ran


FLAKY_TEST = (  # fails on the second run of the session only (the first after the clean run), then never again
    "import os\nfrom pathlib import Path\n\n\ndef test_flaky():\n"
    "    counter = Path(os.environ['TTSCALE_FLAKY_COUNTER'])\n"
    "    runs = int(counter.read_text() or 0) + 1 if counter.exists() else 1\n"
    "    counter.write_text(str(runs))\n    assert runs != 2\n")


def test_a_plain_kill_counts_only_if_it_repeats_under_confirm_kills(
        tools: tuple[ModuleType, ModuleType], tiny_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mutmut", reason="mutmut is installed by `make mutation` (the `mutation` extra)")
    plain, _ = tools
    (tiny_repo / "tests" / "test_flaky.py").write_text(FLAKY_TEST)
    counter = tmp_path / "runs"
    monkeypatch.setenv("TTSCALE_FLAKY_COUNTER", str(counter))
    # dec's two mutants: no test checks dec, so each survives; the first one's run fails once on its own.
    module = {"file": "ttscale/tiny.py", "functions": ["dec"], "confirm_kills": True}
    settings = {"max_children": 1, "pytest_args": ["-q", "-p", "no:cacheprovider"], "timeout_multiplier": 3.0}
    run = plain.run_plain("tiny", module, settings, tmp_path / "stage", ["tests/"], root=tiny_repo)
    assert [v["status"] for _, v in sorted(run["mutants"].items())] == ["survived", "survived"]
    # The clean run, the first mutant's failed run and its confirming run, the second mutant's run.
    assert counter.read_text() == "4"
