"""Errors that name what the user gave: the field (a setting, the photo table, the models, the run name) and
the problem, in the user's terms. The CLI shows a field as its flag, the notebook as its form label."""
from __future__ import annotations

from typing import Mapping


class FieldError(ValueError):
    """`field`: a name of RunSettings or of a run plan ("input", "models", "run_name", "max_cost_usd", ...)."""

    field: str = "value"

    def __init__(self, problem: str, field: str | None = None):
        if field is not None:
            self.field = field
        self.problem = problem
        super().__init__(f"{self.field}: {problem}")


def describe(error: Exception, names: Mapping[str, str]) -> str:
    """The error's text with its field shown as the UI names it (a flag, a label)."""
    if isinstance(error, FieldError):
        return f"{names.get(error.field, error.field)}: {error.problem}"
    return str(error)
