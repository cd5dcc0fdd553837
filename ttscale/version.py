"""The package's version, in a module of its own: code inside ttscale reads it from here, never from the package
(whose `__init__` imports the API lazily; importing it back would close an import cycle)."""

__version__ = "0.1.0"
