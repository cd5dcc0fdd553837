"""Registries: names → objects, imported lazily when registered as "module:attr" strings.

Keeps `import ttscale` light (a strategy's heavy imports happen when it is chosen), gives
"did you mean" errors, and lets other packages add entries through entry points.
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar, cast, overload

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name that is not registered; its message lists what is allowed."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it as written
        return str(self.args[0])


class Registry(Generic[T]):
    """A named table of objects (strategies, tasks, verifiers), imported lazily where registered by path.

    Built-ins register "module:attr" strings, so nothing is imported until a name is chosen; code that already
    holds the object registers it with the decorator:

        @STRATEGIES.register("my_search")
        @strategy(MySearchParams)
        async def my_search(problem, ctx, p): ...

    A name (or alias) is registered once: a second registration raises, unless it passes `replace=True`.
    """

    def __init__(self, kind: str, *, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self._targets: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._loaded: dict[str, T] = {}
        self._group = entry_point_group
        self._plugins_read = False

    @overload
    def register(self, name: str, target: str, *, aliases: tuple[str, ...] = (), replace: bool = False) -> None: ...

    @overload
    def register(
        self, name: str, target: None = None, *, aliases: tuple[str, ...] = (), replace: bool = False
    ) -> Callable[[T], T]: ...

    def register(
        self, name: str, target: str | None = None, *, aliases: tuple[str, ...] = (), replace: bool = False
    ) -> Callable[[T], T] | None:
        """Register `target` ("package.module:attr") under `name` and its aliases; without a target, a decorator
        that registers the object it decorates. A name already taken raises ValueError unless `replace`."""
        if target is None:
            def decorate(obj: T) -> T:
                where = f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', name)}"
                self._add(name, where, aliases=aliases, replace=replace)
                self._loaded[self._key(name)] = obj
                return obj

            return decorate
        if ":" not in target:
            raise ValueError(f"target must look like 'module:attr', got {target!r}")
        self._add(name, target, aliases=aliases, replace=replace)
        return None

    def _add(self, name: str, target: str, *, aliases: tuple[str, ...], replace: bool) -> None:
        key = self._key(name)
        if not key.isidentifier():
            raise ValueError(f"{self.kind} names are identifiers (letters, digits, _), got {name!r}")
        for taken in (key, *map(self._key, aliases)):
            owner = taken if taken in self._targets else self._aliases.get(taken)
            if owner is not None and not replace:
                raise ValueError(f"{self.kind} {taken!r} is already registered ({self._targets[owner]}); "
                                 "pick another name or pass replace=True")
        self._targets[key] = target
        self._loaded.pop(key, None)
        for alias in aliases:
            self._aliases[self._key(alias)] = key

    @staticmethod
    def _key(name: str) -> str:
        return name.strip().lower().replace("-", "_")

    def names(self) -> list[str]:
        self._read_plugins()
        return sorted(self._targets)

    def aliases(self, name: str) -> list[str]:
        """The other names `name` (a registered name or an alias) answers to, sorted; `ttscale list` shows them."""
        key = self.canonical(name)
        return sorted(alias for alias, target in self._aliases.items() if target == key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        self._read_plugins()
        return isinstance(name, str) and self.canonical(name, strict=False) is not None

    def canonical(self, name: str, *, strict: bool = True) -> str | None:
        """The registered name for `name` or one of its aliases (case and -/_ insensitive)."""
        self._read_plugins()
        key = self._key(name)
        if key in self._targets:
            return key
        if key in self._aliases:
            return self._aliases[key]
        if strict:
            raise UnknownNameError(self._unknown_message(name))
        return None

    def get(self, name: str) -> T:
        """The object registered under `name` (imported on first use); UnknownNameError lists the known names."""
        key = self.canonical(name)
        assert key is not None
        if key not in self._loaded:
            module_name, attr = self._targets[key].split(":", 1)
            obj = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            self._loaded[key] = cast(T, obj)
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
            key = self._key(ep.name)
            if key in self._targets or key in self._aliases:  # a built-in (or an earlier plugin) keeps its name
                warnings.warn(f"{self.kind} plugin {ep.name!r} ({ep.value}) ignored: the name is taken",
                              stacklevel=2)
                continue
            self._targets[key] = ep.value
