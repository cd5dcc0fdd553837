"""Tasks, answer extraction and metrics (installed as `ttscale.evals`)."""

from ttscale.evals.base import Task, load_task

__all__ = ["Task", "load_task"]
