"""One photo's result for one model (a journal line, a parquet row), and the parquet file of a model."""
from __future__ import annotations

import io
from dataclasses import dataclass, fields
from pathlib import Path

from .atomic import write_atomic

import polars as pl



@dataclass(slots=True)
class Result:
    """One photo's outcome for one model: the reference's columns, in the reference's order.

    Slots and a tuple of retries: a run keeps every result alive, and the garbage collector walks each live
    container object on every full collection (with a __dict__ and a list, three per photo instead of one: at
    thousands of photos per second the collector cost the runner about a fifth of its time)."""
    id: int
    open_images_id: str | None
    category: str
    is_hot_dog: bool
    scored: bool = True
    pred: bool | None = None
    raw: str | None = None
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    provider: str | None = None
    retries: tuple[str, ...] = ()
    error: str | None = None
    # Load when the last attempt was sent: for latency-under-load plots.
    in_flight_at_send: int | None = None
    limit_at_send: int | None = None
    repeat: int = 0  # with --repeats K, each photo is asked K times: 0..K-1
    # P(hot dog) the answer stated: the Decisions noul, or P(true) at a chat verdict's token when the model was
    # asked for log-probabilities (--logprobs); None otherwise. Journals written before it load with None.
    p_hot_dog: float | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.id, self.repeat)

    def to_json(self) -> dict:
        # dataclasses.asdict deep-copies field by field: ten times slower, and this runs once per photo
        d = {name: getattr(self, name) for name in _RESULT_FIELDS}
        d["retries"] = list(self.retries)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Result":
        kept = {k: v for k, v in d.items() if k in _RESULT_NAMES}
        if "retries" in kept:
            kept["retries"] = tuple(kept["retries"] or ())
        return cls(**kept)


_RESULT_FIELDS = tuple(f.name for f in fields(Result))
_RESULT_NAMES = frozenset(_RESULT_FIELDS)

PARQUET_SCHEMA = {
    "id": pl.Int64, "open_images_id": pl.String, "category": pl.String, "is_hot_dog": pl.Boolean,
    "scored": pl.Boolean, "pred": pl.Boolean, "raw": pl.String, "latency_s": pl.Float64,
    "prompt_tokens": pl.Int64, "completion_tokens": pl.Int64, "reasoning_tokens": pl.Int64,
    "cost_usd": pl.Float64, "provider": pl.String, "retries": pl.String, "error": pl.String,
    "in_flight_at_send": pl.Int64, "limit_at_send": pl.Int64, "repeat": pl.Int64,
    "p_hot_dog": pl.Float64,  # appended last: the columns before it keep their places
}


def results_frame(results: list[Result], schema: dict | None = None) -> pl.DataFrame:
    """One row per result; `schema` (default PARQUET_SCHEMA) names the columns, e.g. a condition's."""
    schema = schema or PARQUET_SCHEMA
    rows = []
    for r in results:
        d = r.to_json()
        d["retries"] = ",".join(d["retries"])
        rows.append(d)
    return pl.DataFrame(rows, schema=schema, orient="row" if not rows else None)


def write_results_parquet(results: list[Result], path: Path, schema: dict | None = None) -> Path:
    """Written whole or not at all (temp file, rename); a failed write is an OSError naming the path (the bytes
    are made in memory first: polars reports a full disk as a parquet format error)."""

    buf = io.BytesIO()
    results_frame(sorted(results, key=lambda r: r.key), schema).write_parquet(buf)
    write_atomic(Path(path), buf.getvalue())
    return path
