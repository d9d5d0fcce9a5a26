"""Real small or read-only file systems for the tests, where the machine allows mounting (root, not in a
container that forbids it); the tests that need one skip cleanly otherwise."""
from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(*args) -> bool:
    try:
        return subprocess.run(["mount", *args], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@contextmanager
def tmpfs(where: Path, size: str = "300k", read_only: bool = False):
    """A tmpfs of `size` mounted at `where` (made), unmounted after; skips the test if mounting is not allowed."""
    where.mkdir(parents=True, exist_ok=True)
    if not _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)):
        pytest.skip("cannot mount a tmpfs here (needs root and a kernel that allows it)")
    try:
        if read_only:
            (where / "out").mkdir()
            if not _mount("-o", "remount,ro", str(where)):
                pytest.skip("cannot remount the tmpfs read-only here")
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=10)


def fill(where: Path, leave_bytes: int) -> Path:
    """A filler file that leaves about `leave_bytes` free on the file system of `where`."""
    import os

    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    filler = where / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave_bytes))
    return filler
