"""Lazy registries: names → "module:attr" strings, imported only when used.

Keeps `import ttscale` light (a strategy's heavy imports happen when it is chosen), gives
"did you mean" errors, and lets other packages add entries through entry points.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any


class UnknownNameError(KeyError):
    """A name that is not registered; its message lists what is allowed."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it as written
        return str(self.args[0])


class Registry:
    """A named table of lazily imported objects (strategies, tasks, verifiers)."""

    def __init__(self, kind: str, *, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self._targets: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._loaded: dict[str, Any] = {}
        self._group = entry_point_group
        self._plugins_read = False

    def register(self, name: str, target: str, *, aliases: tuple[str, ...] = ()) -> None:
        """Register `target` ("package.module:attr") under `name` and its aliases."""
        if ":" not in target:
            raise ValueError(f"target must look like 'module:attr', got {target!r}")
        self._targets[name] = target
        for alias in aliases:
            self._aliases[alias] = name

    def names(self) -> list[str]:
        self._read_plugins()
        return sorted(self._targets)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        self._read_plugins()
        return isinstance(name, str) and self.canonical(name, strict=False) is not None

    def canonical(self, name: str, *, strict: bool = True) -> str | None:
        """The registered name for `name` or one of its aliases (case and -/_ insensitive)."""
        self._read_plugins()
        key = name.strip().lower().replace("-", "_")
        if key in self._targets:
            return key
        if key in self._aliases:
            return self._aliases[key]
        if strict:
            raise UnknownNameError(self._unknown_message(name))
        return None

    def get(self, name: str) -> Any:
        """Import and return the object registered under `name`."""
        key = self.canonical(name)
        assert key is not None
        if key not in self._loaded:
            module_name, attr = self._targets[key].split(":", 1)
            self._loaded[key] = getattr(importlib.import_module(module_name), attr)
        return self._loaded[key]

    def _unknown_message(self, name: str) -> str:
        choices = list(self._targets) + list(self._aliases)
        close = difflib.get_close_matches(name.lower().replace("-", "_"), choices, n=1, cutoff=0.6)
        hint = f"; did you mean {self._aliases.get(close[0], close[0])!r}?" if close else ""
        return f"unknown {self.kind} {name!r}{hint} (known: {', '.join(sorted(self._targets))})"

    def _read_plugins(self) -> None:
        if self._plugins_read or self._group is None:
            return
        self._plugins_read = True
        for ep in entry_points(group=self._group):
            self._targets.setdefault(ep.name, ep.value)
