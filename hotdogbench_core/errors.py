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
    if isinstance(error, OSError):
        return os_error_text(error)
    return str(error)


class RunError(RuntimeError):
    """A run cannot start or go on; the message says why and what to do."""


class StorageError(RunError):
    """A file of the run could not be written: the path, the OS's reason, and what that cost.

    unsaved: paid answers that reached no journal (they are asked again on a resume); saved: answers that
    are in the journals. run_dir: the run folder, for the resume line a UI prints."""

    def __init__(self, path, reason: str, *, unsaved: int = 0, saved: int | None = None, run_dir=None,
                 detail: str = ""):
        self.path, self.reason, self.unsaved, self.saved, self.run_dir = path, reason, unsaved, saved, run_dir
        lost = (f"{unsaved} paid answer(s) could not be saved and will be asked again on a resume"
                if unsaved else "no paid answer was lost")
        kept = f"; {saved} answer(s) are in the journal" if saved is not None else ""
        super().__init__(f"could not write {path}: {reason}. {lost}{kept}{detail}. Free space on that disk (or make "
                         f"it writable), then finish the run with --resume")


def os_error_text(error: OSError) -> str:
    """An OSError at a path as a sentence: which path, what the OS said, what to do."""
    path = error.filename if error.filename is not None else "a file"
    reason = error.strerror or str(error)
    extra = f" -> {error.filename2}" if getattr(error, "filename2", None) else ""
    hint = {28: "free some space there", 30: "that file system is read-only: choose another folder (--out)",
            13: "no permission: choose another folder (--out)", 21: "it is a folder, not a file",
            20: "a part of that path is a file, not a folder: choose another folder (--out)",
            17: "a file of that name is in the way: choose another folder (--out)",
            5: "the device reports an I/O error: check the disk"}.get(error.errno, "check that path")
    return f"cannot use {path}{extra}: {reason} ({hint})"
