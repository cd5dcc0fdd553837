"""Hardware profiles: peak FLOP/s and memory bandwidth, whose ratio I prices memory traffic in FLOPs.

Kinetics' eFLOPs = compute FLOPs + I · bytes moved, with I = peak FLOP/s ÷ bandwidth (FLOPs per byte):
a byte read from HBM costs as much time as I FLOPs.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

#: The profile used when none is named: B200, I = 562.5, as in the Kinetics paper.
DEFAULT_HARDWARE = "B200"

_SPEC_RE = re.compile(r"^\s*(?P<flops>[0-9.eE+]+)\s*/\s*(?P<bw>[0-9.eE+]+)\s*$")


class HardwareError(ValueError):
    """A hardware name or profile that cannot be used; the message says what is allowed."""


@dataclass(frozen=True, kw_only=True)
class Hardware:
    """One accelerator, as the cost model sees it."""

    name: str
    """Label for reports."""
    peak_flops: float
    """Peak dense matmul throughput, FLOP/s."""
    bandwidth: float
    """Memory (HBM) bandwidth, bytes/s."""
    note: str = ""
    """Where the numbers come from."""

    def __post_init__(self) -> None:
        for field in ("peak_flops", "bandwidth"):
            value = getattr(self, field)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise HardwareError(f"{field} must be a finite number > 0, got {value!r}")

    @property
    def intensity(self) -> float:
        """I: FLOPs per byte at which compute and memory time are equal."""
        return self.peak_flops / self.bandwidth

    @classmethod
    def preset(cls, name: str) -> Hardware:
        """A shipped profile by name, case-insensitive (A100, H100, H200, B200)."""
        table = _presets()
        key = name.strip().upper()
        if key not in table:
            close = difflib.get_close_matches(key, list(table), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise HardwareError(
                f"unknown hardware {name!r}{hint} (presets: {', '.join(sorted(table))}; "
                "or 'FLOPS/BANDWIDTH' such as '989e12/3.35e12')"
            )
        entry = table[key]
        return cls(
            name=key,
            peak_flops=float(entry["peak_flops"]),
            bandwidth=float(entry["bandwidth"]),
            note=str(entry.get("note", "")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "peak_flops": self.peak_flops,
            "bandwidth": self.bandwidth,
            "intensity": self.intensity,
        }


def hardware_names() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(_presets())


def load_hardware(spec: str | Hardware | Mapping[str, Any] | None = None) -> Hardware:
    """A profile from a preset name, a 'FLOPS/BANDWIDTH' string, a mapping, or a `Hardware` (None: B200)."""
    if spec is None:
        return Hardware.preset(DEFAULT_HARDWARE)
    if isinstance(spec, Hardware):
        return spec
    if isinstance(spec, Mapping):
        try:
            return Hardware(
                name=str(spec.get("name", "custom")),
                peak_flops=float(spec["peak_flops"]),
                bandwidth=float(spec["bandwidth"]),
                note=str(spec.get("note", "")),
            )
        except KeyError as exc:
            raise HardwareError(f"a hardware profile needs peak_flops and bandwidth; missing {exc}") from None
    match = _SPEC_RE.match(spec)
    if match:
        try:
            flops, bandwidth = float(match["flops"]), float(match["bw"])
        except ValueError:
            raise HardwareError(
                f"cannot read hardware {spec!r}; write FLOPS/BANDWIDTH, e.g. 989e12/3.35e12"
            ) from None
        return Hardware(name=spec.strip(), peak_flops=flops, bandwidth=bandwidth)
    return Hardware.preset(spec)


@cache
def _presets() -> dict[str, dict[str, Any]]:
    text = resources.files("ttscale").joinpath("data/hardware.json").read_text(encoding="utf-8")
    table: dict[str, dict[str, Any]] = json.loads(text)["hardware"]
    return {name.upper(): entry for name, entry in table.items()}
