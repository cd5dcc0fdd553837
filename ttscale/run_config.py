"""A run's config.json: the identity `--resume` checks, the spec it was made from, the machine it ran on."""

from __future__ import annotations

import json
import platform
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ttscale.storage import CONFIG, RunDir

if TYPE_CHECKING:
    from ttscale.engine.base import Engine
    from ttscale.runner import Prepared, RunSpec


def write_config(
    run_dir: RunDir, prepared: Prepared, engine: Engine | dict[str, Any] | None = None, argv: list[str] | None = None
) -> None:
    """Write config.json. Called before the engine starts (engine None), so a run killed while its
    engine starts can already be resumed; `record_engine` adds the engine's description once it runs."""
    from ttscale import __version__

    spec = json.loads(json.dumps(asdict(prepared.spec), default=str))
    if prepared.spec.server is not None:  # never a user:password from the URL
        spec["server"]["base_url"] = prepared.spec.server.public_url()
    info = engine.describe() if engine is not None and not isinstance(engine, dict) else engine
    run_dir.write_json(
        CONFIG,
        {
            "identity": json.loads(json.dumps(prepared.identity(), default=str)),
            "spec": spec,
            "environment": {
                "ttscale_version": __version__,
                "python": platform.python_version(),
                "platform": platform.platform(),
                "engine": info,
            },
            "command": _redact_argv(argv if argv is not None else sys.argv),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    )


def record_engine(run_dir: RunDir, info: dict[str, Any]) -> None:
    """Add the started engine's description (versions, settings) to config.json."""
    config = run_dir.read_config()
    config.setdefault("environment", {})["engine"] = info
    run_dir.write_json(CONFIG, config)


def _redact_argv(argv: Sequence[str]) -> list[str]:
    """The command line with any user:password in a URL masked."""
    return [re.sub(r"(?<=://)[^/@\s]*@", "***@", str(arg)) for arg in argv]


def default_out(spec: RunSpec) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    task = spec.task.replace(":", "-").replace("/", "_")
    return Path("runs") / f"{spec.strategy}-{task}-{spec.budget}-{stamp}"
