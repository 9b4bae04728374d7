"""mtkit: an offline machine-translation toolkit (train, export, runtime, TUI)."""

__version__ = "0.1.0"
