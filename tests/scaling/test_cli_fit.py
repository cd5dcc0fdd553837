"""`ttscale fit` from CSV points and from run directories; errors are one line with exit code 2."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ttscale import cli
from ttscale.scaling import fit_coverage, fit_power

KS = [1, 2, 4, 8, 16, 32, 64]


@pytest.fixture(autouse=True)
def _only_cost_and_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        cli, "SUBCOMMANDS", {k: v for k, v in cli.SUBCOMMANDS.items() if k in ("cost", "fit")}
    )


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _csv(path: Path, header: list[str], rows: Sequence[Sequence[object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_coverage_points_json_matches_the_library(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rows = [
        [p, k, float(np.clip(np.exp(-1.2 * k**-0.5) + 0.05 * rng.normal(), 0, 1))]
        for p in range(30)
        for k in KS
    ]
    points = _csv(tmp_path / "cov.csv", ["problem", "k", "coverage"], rows)
    code, out, _ = _run(
        capsys, "fit", "--law", "coverage", "--points", str(points), "--json", "--n-boot", "200"
    )
    assert code == 0
    report = json.loads(out)
    p, k, c = (np.array(col) for col in zip(*rows, strict=True))
    library = fit_coverage(k=k, coverage=c, problem=p, n_boot=200)
    assert report["params"]["a"]["estimate"] == pytest.approx(library.params["a"])
    assert report["params"]["b"]["ci"] == pytest.approx(list(library.ci["b"]))
    assert report["resampled"] == "problems" and report["n_units"] == 30


def test_saturation_power_and_text_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    budgets = np.geomspace(100, 1e5, 8)
    rows = [[b, 0.8 - 3 * b**-0.4] for b in budgets]
    points = _csv(tmp_path / "sat.csv", ["Budget", "Accuracy"], rows)
    code, out, _ = _run(capsys, "fit", "--law", "saturation", "--form", "power", "--points", str(points))
    assert code == 0
    assert "A − B·C^(−alpha)" in out and "C_star" in out and "R² 1.00000" in out
    assert fit_power(budget=budgets, accuracy=[r[1] for r in rows], n_boot=0).params[
        "alpha"
    ] == pytest.approx(0.4)


def test_ttspm_n_star_past_the_data_is_printed_as_an_extrapolation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import ttscale

    # Issue 27's hand example: the curve is still rising at N = 32, so N* (> 32) is the law's projection.
    rows = list(zip([1, 2, 4, 8, 16, 32], [0.03, 0.06, 0.12, 0.22, 0.40, 0.65], strict=True))
    points = _csv(tmp_path / "sat.csv", ["budget", "accuracy"], rows)
    code, out, _ = _run(capsys, "fit", "--law", "saturation", "--points", str(points), "--n-boot", "50")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("N_star"))
    assert "(beyond the largest measured N = 32: an extrapolation, not a finding)" in line
    assert "F_max      1 " in out
    code, out, _ = _run(capsys, "fit", "--law", "saturation", "--points", str(points), "--n-boot", "50", "--json")
    report = json.loads(out)
    assert report["params"]["F_max"]["estimate"] <= 1 and report["params"]["F_max"]["ci"][1] <= 1
    assert report["details"]["N_star_extrapolated"] is True and report["details"]["largest_N"] == 32
    api = ttscale.fit(law="saturation", points=points, n_boot=50)
    assert api.details["N_star_extrapolated"] is True and api.params["F_max"] <= 1
    # Inside the range (F_max 0.7, p 0.3: N* = 9 ≤ 32): printed plainly, flagged False.
    inside = _csv(tmp_path / "in.csv", ["budget", "accuracy"],
                  [[n, 0.7 * (1 - 0.7**n)] for n in (1, 2, 4, 8, 16, 32)])
    code, out, _ = _run(capsys, "fit", "--law", "saturation", "--points", str(inside), "--n-boot", "50")
    assert code == 0 and "extrapolation" not in out and "N_star     9 " in out
    code, out, _ = _run(capsys, "fit", "--law", "saturation", "--points", str(inside), "--n-boot", "50", "--json")
    assert json.loads(out)["details"]["N_star_extrapolated"] is False


def test_kinetics_points_print_the_owner_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cost = np.geomspace(10, 1e5, 10)
    rows = [[f"{1 + i // 4}B", c, 0.9 - 2 * c**-0.3] for i, c in enumerate(cost)]
    points = _csv(tmp_path / "k.csv", ["model", "total_cost", "coverage"], rows)
    code, out, _ = _run(capsys, "fit", "--law", "kinetics", "--points", str(points), "--json")
    assert code == 0
    owners = json.loads(out)["details"]["owners"]
    assert [o["model"] for o in owners] == ["1B", "2B", "3B"] and owners[-1]["high"] is None


def test_genrm_points_need_lambda(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows = [
        [s, v, 1 - 1 / (s * (1 + v)) ** 0.3 - 0.02 * (np.log(s) - 0.6 * np.log(s * (1 + v))) ** 2]
        for s in (1, 2, 4, 8, 16, 32)
        for v in (1, 2, 4, 8, 16)
    ]
    points = _csv(tmp_path / "g.csv", ["S", "V", "accuracy"], rows)
    code, _, err = _run(capsys, "fit", "--law", "genrm", "--points", str(points))
    assert code == 2 and "--law genrm needs --lambda" in err
    code, out, _ = _run(capsys, "fit", "--law", "genrm", "--points", str(points), "--lambda", "1", "--json")
    assert code == 0 and json.loads(out)["params"]["a"]["estimate"] > 0


REAL = Path(__file__).resolve().parents[1] / "data" / "real_runs"
#: Real runs of `ttscale run` (tests/data/make_runs.py): self-consistency with 4, 8 and 16 samples, 12 problems.
RUNS = [REAL / name for name in ("sc-n4", "sc-n8", "sc-n16")]


def test_run_directories_feed_the_laws(capsys: pytest.CaptureFixture[str]) -> None:
    from ttscale.runstore.runs import read_run
    from ttscale.scaling import fit_coverage_from_samples, fit_saturation

    records = [r for run in RUNS for r in read_run(run).records]
    code, out, _ = _run(capsys, "fit", "--law", "coverage", *map(str, RUNS), "--json", "--n-boot", "100")
    # Coverage pools each problem's samples over the runs, each graded as the run stored it.
    n = {r["id"]: 0 for r in records}
    correct = dict(n)
    for r in records:
        n[r["id"]] += len(r["samples"])
        correct[r["id"]] += sum(s["correct"] for s in r["samples"])
    expected = fit_coverage_from_samples(n=np.array(list(n.values())), correct=np.array(list(correct.values())),
                                         n_boot=100, seed=0)
    report = json.loads(out)
    assert code == 0 and report["n_units"] == 12
    assert report["params"]["a"]["estimate"] == pytest.approx(expected.params["a"])
    code, out, _ = _run(capsys, "fit", "--law", "saturation", "--x", "samples", *map(str, RUNS), "--json",
                        "--n-boot", "100")
    report = json.loads(out)
    expected = fit_saturation(budget=np.array([float(r["ledger"]["samples"]) for r in records]),
                              accuracy=np.array([float(r["correct"]) for r in records]),
                              problem=np.array([r["id"] for r in records]), n_boot=100, seed=0)
    assert code == 0 and report["n_units"] == 12 and report["n_points"] == 3
    assert report["params"]["F_max"]["estimate"] == pytest.approx(expected.params["F_max"])
    code, _, err = _run(capsys, "fit", "--law", "genrm", *map(str, RUNS), "--lambda", "1")
    assert code == 2 and "genrm needs info.S in every record" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--law", "coverage"], "give either run directories or --points"),
        (["--law", "coverage", "--points", "/no/such.csv"], "cannot read '/no/such.csv'"),
        (["--law", "coverage", "nowhere"], "'nowhere' is not a run directory"),
        (["--law", "cubic", "--points", "x.csv"], "invalid choice: 'cubic'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _run(capsys, "fit", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_missing_columns_are_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    points = _csv(tmp_path / "bad.csv", ["budget", "score"], [[1, 0.5]])
    code, _, err = _run(capsys, "fit", "--law", "saturation", "--points", str(points))
    assert code == 2 and "needs columns budget, accuracy" in err and "found budget, score" in err
    points = _csv(tmp_path / "text.csv", ["k", "coverage"], [[1, "high"]])
    code, _, err = _run(capsys, "fit", "--law", "coverage", "--points", str(points))
    assert code == 2 and "column 'coverage' must be numbers, found 'high'" in err


def test_plot_without_matplotlib_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        points = _csv(
            tmp_path / "s.csv", ["budget", "accuracy"], [[n, 0.8 * (1 - 0.9**n)] for n in (1, 2, 4, 8, 16)]
        )
        code, _, err = _run(
            capsys, "fit", "--law", "saturation", "--points", str(points), "--plot", str(tmp_path / "p.png")
        )
        assert code == 2 and "--plot needs matplotlib" in err
    else:
        points = _csv(
            tmp_path / "s.csv", ["budget", "accuracy"], [[n, 0.8 * (1 - 0.9**n)] for n in (1, 2, 4, 8, 16)]
        )
        code, _, _ = _run(
            capsys, "fit", "--law", "saturation", "--points", str(points), "--plot", str(tmp_path / "p.png")
        )
        assert code == 0 and (tmp_path / "p.png").stat().st_size > 0


def test_the_missing_matplotlib_hint_names_the_report_extra(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError, installed or not
    points = _csv(tmp_path / "s.csv", ["budget", "accuracy"], [[n, 0.8 * (1 - 0.9**n)] for n in (1, 2, 4, 8, 16)])
    code, out, err = _run(
        capsys, "fit", "--law", "saturation", "--points", str(points), "--plot", str(tmp_path / "p.png")
    )
    assert code == 2 and out == ""
    assert err == "ttscale: error: --plot needs matplotlib: pip install 'ttscale[report]'\n"
    assert not (tmp_path / "p.png").exists()


def test_kinetics_from_run_directories_labels_runs_by_their_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The real runs, relabelled as two models in config.json's own layout (identity.engine.model); the
    # "large" one costs 4x the eFLOPs per record and answers every problem.
    folders = []
    for name, scale in (("small", 1.0), ("large", 4.0)):
        for run in RUNS:
            folder = Path(shutil.copytree(run, tmp_path / name / run.name))
            config = json.loads((folder / "config.json").read_text())
            config["identity"]["engine"]["model"] = f"org/{name}-model"
            (folder / "config.json").write_text(json.dumps(config))
            lines = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
            for record in lines:
                record["ledger"]["eflops"] *= scale
                record["correct"] = record["correct"] or name == "large"
            (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
            folders.append(str(folder))
    code, out, _ = _run(capsys, "fit", "--law", "kinetics", *folders, "--json", "--n-boot", "50")
    assert code == 0
    report = json.loads(out)
    assert report["details"]["models"] == ["org/small-model", "org/large-model"]
    assert {o["model"] for o in report["details"]["owners"]} <= {"org/small-model", "org/large-model"}
    assert report["n_units"] == 12
