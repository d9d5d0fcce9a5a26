"""Stop a model the server cannot answer, before it is paid for (or waited on) photo after photo.

Two signs, both only while the model has no answer at all (one answer and it runs to the end):
- its first photos all ended with the same non-retryable error (an unknown model id: 404; a body the server
  refuses: 400 or 422; a gateway's "No connected db." for a wrong key);
- its first attempts all came back with nothing but failures (HTML or junk with status 200, 500 forever,
  stalled or dropped connections): a wrong base URL or a broken server.
Rate signals (429, an in-flight budget) are the server saying "later": they never count.
"""
from __future__ import annotations

from ..protocol.answers import Answer, Failed, Outcome, Retry

SAME_ERROR_PHOTOS = 5  # one unlucky photo is noise; five in a row with the same status are the server's answer
FUTILE_ATTEMPTS = 20  # > 2 photos' full retry budgets of the reference (8): a flaky start is not a broken server
PATH_ERRORS = ("404", "405", "200/badjson", "200/notobject")  # what a wrong base URL answers


def _status(error: str) -> str:
    return error.split(":", 1)[0].strip()


class FailFast:
    def __init__(self, url: str, model: str):
        self.url, self.model = url, model
        self.answered = 0
        self.errors: list[str] = []  # final errors of the first photos
        self.futile = 0  # attempts in a row with nothing but failures
        self.last = ""
        self.last_text = ""

    def see(self, outcome: Outcome) -> tuple[str, str] | None:
        """(why to stop, what to do) once the signs are there, else None."""
        if isinstance(outcome, Answer):
            self.answered += 1
            return None
        if self.answered or isinstance(outcome, Retry) and outcome.signal == "rate":
            return None
        self.futile += 1
        if isinstance(outcome, Failed):
            self.errors.append(outcome.error)
            self.last, self.last_text = _status(outcome.error), outcome.error
            first = self.errors[:SAME_ERROR_PHOTOS]
            if len(first) == SAME_ERROR_PHOTOS and len({_status(e) for e in first}) == 1 and \
                    len(self.errors) == SAME_ERROR_PHOTOS:
                return (f"fail fast: the first {SAME_ERROR_PHOTOS} photos all failed with the same error, "
                        f"{first[0][:300]}", self._hint())
        elif isinstance(outcome, Retry):
            self.last = outcome.tag
        if self.futile == FUTILE_ATTEMPTS:
            return (f"fail fast: none of the first {FUTILE_ATTEMPTS} requests was answered (the last: {self.last})",
                    self._hint())
        return None

    def _hint(self) -> str:
        about_model = self.model in self.last_text or "model" in self.last_text.lower()
        if (self.last in PATH_ERRORS or self.last.startswith("200/")) and not about_model:
            return (f"requests go to {self.url}: check the base URL (it is the part before /v1) and that the "
                    f"server offers this endpoint")
        return "check the model id and the key for this server, then resume the run"
