"""Whole files or none: what every file of a run folder but the journal is written with."""
from __future__ import annotations

import json
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write a file so that a reader sees the old or the new bytes, never a part: temp file, fsync, rename.
    fsync=False for a file that need not survive a crash (a heartbeat), only be whole when read."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a part of a file must not stay (nor hold the room a full disk lacks)
        raise


def write_json(path: Path, obj) -> Path:
    write_atomic(path, (json.dumps(obj, indent=2) + "\n").encode())
    return path
