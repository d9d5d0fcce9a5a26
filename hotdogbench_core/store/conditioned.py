"""One photo's result under a condition other than the reference: a Result with what was sent recorded.

Why a condition's results live in their own journal and parquet (journal/<stem>@<condition>.jsonl,
<stem>@<condition>.parquet, named by store/rundir.RunDir) rather than in one journal per model keyed
(id, repeat, condition): a run that names no condition, and every run written before conditions existed, is a
run of the reference condition alone, and its files must stay byte for byte what they were. With one file per
(model, condition) the reference keeps its plain names, header and columns, old runs read back unchanged, the
key inside every file stays (id, repeat), and a resume compares one header (the condition's name and spec
among the request settings) per file, so adding a condition to a run adds files and touches none.

A condition's rows carry the reference columns first, then the condition's: its name, and the SHA-256 and size
of the image bytes actually sent (after the transform), so a row says which bytes the model saw.
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ..protocol.conditions import REFERENCE
from .results import PARQUET_SCHEMA, Result

CONDITION_COLUMNS = {"condition": pl.String, "image_sha256": pl.String, "image_width": pl.Int64,
                     "image_height": pl.Int64, "image_bytes": pl.Int64}
CONDITION_SCHEMA = {**PARQUET_SCHEMA, **CONDITION_COLUMNS}  # the reference columns first, the condition's last
_EXTRA = tuple(CONDITION_COLUMNS)


@dataclass(slots=True)
class ConditionResult(Result):
    condition: str = REFERENCE
    image_sha256: str | None = None  # of the bytes sent (the transformed photo, or the photo itself)
    image_width: int | None = None
    image_height: int | None = None
    image_bytes: int | None = None

    def to_json(self) -> dict:
        d = Result.to_json(self)
        for name in _EXTRA:
            d[name] = getattr(self, name)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "ConditionResult":
        base = Result.from_json(d)
        out = cls(**{name: getattr(base, name) for name in Result.__dataclass_fields__})
        for name in _EXTRA:
            if name in d:
                setattr(out, name, d[name])
        return out
