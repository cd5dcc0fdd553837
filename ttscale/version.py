"""The package's version, in a module of its own: code inside ttscale reads it from here, never from the package
(whose `__init__` imports the API lazily; importing it back would close an import cycle)."""

__version__ = "0.1.0"

FORMER_PATHS_REMOVED_IN = "0.3.0"
"""The first version without the former module paths (`ttscale.FORMER_PATHS`) and names (`FORMER_NAMES`)."""
FORMER_NAMES = {"ttscale.scaling.coverage.pass_at_k": "ttscale.stats.metrics.pass_at_k"}
"""Names that moved out of a module that stayed: the module's `__getattr__` hands the new one out (`former_name`)."""


def moved(former: str, home: str) -> None:
    """The DeprecationWarning of a former path or name: where it lives now, and the version that removes it."""
    import warnings

    warnings.warn(f"{former} moved to {home}; import it from there (the former path goes in ttscale "
                  f"{FORMER_PATHS_REMOVED_IN})", DeprecationWarning, stacklevel=3)


def former_name(module: str, name: str) -> object:
    """`module.name` by its `FORMER_NAMES` entry, warned; the AttributeError Python gives when there is none."""
    home = FORMER_NAMES.get(f"{module}.{name}")
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    moved(f"{module}.{name}", home)
    import importlib

    where, _, attribute = home.rpartition(".")
    return getattr(importlib.import_module(where), attribute)
