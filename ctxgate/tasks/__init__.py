"""Tasks: one module per task family, each registering ``TaskSpec`` factories."""

from ctxgate.tasks.base import BuildContext, MaterialExhausted, Sample, TaskSpec, TaskTooShort
from ctxgate.tasks.registry import all_tasks, get_task, task_names

__all__ = [
    "BuildContext",
    "MaterialExhausted",
    "Sample",
    "TaskSpec",
    "TaskTooShort",
    "all_tasks",
    "get_task",
    "task_names",
]
