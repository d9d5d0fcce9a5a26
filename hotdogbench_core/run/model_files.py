"""One model run's files: the resume rules its journal is held to, and the parquet and summary rebuilt from
its results (a ModelRun mixin)."""
from __future__ import annotations

import json

from ..protocol.conditions import Condition
from ..stats.conditions import condition_summary
from ..stats.summary import summarize, summarize_statistics
from ..store.conditioned import CONDITION_SCHEMA, ConditionResult
from ..store.dataset import Photo
from ..store.journal import read_journal
from ..store.results import Result, write_results_parquet
from .settings import RunError


def _difference(key: str, have, want) -> str:
    """What differs, named: for the request settings the keys that changed (e.g. "logprobs: the run has none,
    now true"), else the two values."""
    if isinstance(have, dict) and isinstance(want, dict):
        changed = [k for k in dict.fromkeys([*have, *want]) if have.get(k, _ABSENT) != want.get(k, _ABSENT)]

        def show(d, k):
            return "none" if k not in d else json.dumps(d[k], default=str)[:60]
        return "; ".join(f"{k}: the run has {show(have, k)}, now {show(want, k)}" for k in changed)
    return f"{key} {str(have)[:80]} != {str(want)[:80]}"


_ABSENT = object()


class ModelFiles:
    """Resume rules and outputs: the half of ModelRun that talks to the run folder."""

    def _header(self) -> dict:
        cond = {"condition": self.condition.header()} if self.condition is not None else {}
        return {"model": self.model, **cond, "dataset_sha256": self.dataset.sha256, "dataset_rows": len(self.dataset),
                "request": self.request.settings(), "repeats": self.repeats}

    def _prepare(self, resume: bool) -> None:
        state = read_journal(self._journal_path)
        if state.skipped:
            self._notices.append(f"{self._journal_path}: skipped line(s) {', '.join(map(str, state.skipped[:10]))} "
                                 f"of a kind this version does not write (they hold no result)")
        if state.header is None and not state.results:
            self._todo = None  # everything
            return
        if not resume:
            raise RunError(f"{self.run_dir} already holds results for {self.arm}: "
                           f"resume that run, or choose another run name")
        want, have = self._header(), state.header or {}
        if have.get("condition") != want.get("condition"):
            raise RunError(self._changed_condition(have.get("condition")))
        for key, what in (("dataset_sha256", "dataset"), ("request", "request settings"), ("repeats", "repeats")):
            if have.get(key) != want[key]:
                raise RunError(f"cannot resume {self.arm} in {self.run_dir}: the {what} differ from the run's "
                               f"({_difference(key, have.get(key), want[key])}); choose another run name")
        keys = {(p.id, k) for p in self.dataset.photos for k in range(self.repeats)}
        self.results = {key: r for key, r in state.results.items() if key in keys}
        self.done = len(self.results)
        self.previous_wall_s = sum(s.get("wall_s") or 0.0 for s in state.sessions)
        self._todo = keys - set(self.results)

    def _changed_condition(self, had) -> str:
        """Why a resume is refused when the journal's condition is not the one asked for now."""
        spec = had.get("spec") if isinstance(had, dict) else None
        try:
            was = Condition(self.condition_name, **spec).text() if isinstance(spec, dict) else None
        except TypeError:
            was = None
        now = self.condition.text() if self.condition is not None else ""
        return (f"cannot resume {self.model} under condition {self.condition_name} in {self.run_dir}: the "
                f"condition {self.condition_name} was {was if was is not None else json.dumps(had)[:80]!r} in this "
                f"run, now {now!r}; give the new spec another condition name, or choose another run name")

    def _new_result(self, photo: Photo, repeat: int, **values) -> Result:
        if self.condition is None:
            return Result(id=photo.id, open_images_id=photo.open_images_id, category=photo.category,
                          is_hot_dog=photo.is_hot_dog, scored=photo.scored, repeat=repeat, **values)
        return ConditionResult(id=photo.id, open_images_id=photo.open_images_id, category=photo.category,
                               is_hot_dog=photo.is_hot_dog, scored=photo.scored, repeat=repeat,
                               condition=self.condition_name, **values)

    def ordered_results(self) -> list[Result]:
        """Every photo in id order; photos a stopped run never settled carry an error saying so."""
        out = []
        for p in self.dataset.photos:
            for k in range(self.repeats):
                r = self.results.get((p.id, k))
                if r is None:
                    r = self._new_result(p, k, error=f"not run: {self.stop_reason}")
                out.append(r)
        return out

    def write_outputs(self) -> dict:
        ordered = self.ordered_results()
        write_results_parquet(ordered, self.rundir.results(self.model, self.condition_name),
                              CONDITION_SCHEMA if self.condition is not None else None)
        wall = self.previous_wall_s + round(self.wall_s, 3)  # the sum of what the journal records
        # The reference keys over repeat 0 (comparable with a one-repeat run); photos_per_s counts every request.
        summary = summarize(self.model, [r for r in ordered if r.repeat == 0], wall, asked=len(ordered))
        if self.condition is not None:  # (model, condition) names the entry; the reference's has no condition key
            summary = {"model": summary.pop("model"), "condition": self.condition_name,
                       "condition_spec": self.condition.spec(), **summary}
        summary["concurrency"] = {"start": self.settings.start_concurrency, "cap": self.settings.max_concurrency,
                                  **self.limiter.stats(), "retries_exhausted": self.retries_exhausted}
        if self.stop_reason:
            summary["stopped"] = self.stop_reason
            if self.fatal_hint:
                summary["hint"] = self.fatal_hint
        summary.update(summarize_statistics(ordered, self.repeats, self.request.probability))
        if self.experiment:
            summary.update(condition_summary([r for r in ordered if r.repeat == 0 and r.scored],
                                             sent=self.condition is not None))
        return summary
