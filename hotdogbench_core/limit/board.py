"""Processes of one machine on one key (two notebooks, a notebook and the CLI): what each took lately.

Two hotdogbench processes on one key share its caps but no memory, so each runs a limiter of its own, and the two
keep whatever shares their starts left them (their climbs back after a cut scale with their own paces). The
board is a directory per key of small files, one per process, each rewritten a few times a second with what that
process took over the last SHARE_S seconds and whether it started into a cap the others keep spent (its first sends
all refused, with nothing taken and nothing out: the key's cap, as `KeyCoordinator.starved` reads it in one
process; behind a cap of its own a process's first sends take that cap's burst). Once one did, no process sets its
pace's ceiling under an equal share of what they all took (a `BoardMember`'s cuts and spent quotas). Caps of each
process's own set off nothing (fake clock: two processes on one key-wide cap 26 -> 19 misses of 100; each behind its
own, no draw of 210 moved; over HTTP the gain is smaller: docs/limiter.md). A process whose own cap was spent when it
started reads as starved too, and is then held at an equal share over its cap: more refusals, nothing lost. The
directory's name is a keyed hash of the base URL and the API key (HMAC-SHA256 under a random salt kept beside it),
never the key; entries not rewritten for STALE_S seconds are processes gone and are not read. An entry is a
process's: two runs at once in one process write one entry. Models at once in one run share a KeyCoordinator
instead (limit/key.py).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import time
from pathlib import Path
from typing import Callable

from .paced import PacedLimiter, taken_since


class KeyBoard:
    """This process's entry on its key's board, and the others' entries (see the module doc)."""

    PUBLISH_S = 0.25  # an entry is rewritten at most this often: a cut reads the others' takes a moment old
    STALE_S = 3.0  # an entry not rewritten for this long is a process that ended (or was killed) without removing it

    def __init__(self, directory: Path | None, clock: Callable[[], float] = time.monotonic):
        self.directory, self.clock = directory, clock
        self.name = str(os.getpid())
        self._written, self._entry = -math.inf, None
        self.most = 1  # the most processes seen on the key at once, this one included (summary.json says it)

    @classmethod
    def for_key(cls, api_key: str, base_url: str, root: Path | None = None) -> KeyBoard:
        """The board of a key at a server, under `root` (default: the user's cache directory). OSError if the
        directory cannot be made (the caller goes on without a board, and says so)."""
        root = root or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hotdogbench" / "keys"
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        salt_path = root / "salt"
        if not salt_path.exists():  # written whole, then linked in: two processes starting at once agree on one
            tmp = root / f"salt.{os.getpid()}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(32))
            try:
                os.link(tmp, salt_path)
            except FileExistsError:
                pass
            finally:
                tmp.unlink(missing_ok=True)
        salt = salt_path.read_bytes()
        if len(salt) < 16:
            raise OSError(f"{salt_path} holds {len(salt)} bytes, not a salt: remove it")
        name = hmac.new(salt, f"{base_url}\n{api_key}".encode(), hashlib.sha256).hexdigest()[:32]
        (root / name).mkdir(exist_ok=True, mode=0o700)
        return cls(root / name)

    def member(self, start: int, cap: int, clock: Callable[[], float] = time.perf_counter,
               max_rate: float | None = None) -> BoardMember:
        """A limiter for this process's model that reads and writes the board (RunSettings.limiter_for)."""
        return BoardMember(start, cap, self, clock, max_rate)

    def due(self, starved: bool) -> bool:
        """An entry is owed: PUBLISH_S since the last, or `starved` turned (the others read the key's cap from it)."""
        return self.clock() - self._written >= self.PUBLISH_S or (self._entry or {}).get("starved") != starved

    def publish(self, taken_per_s: float, starved: bool) -> None:
        """This process took `taken_per_s` lately (the caller asks `due` first: an entry a few times a second)."""
        self._written, self._entry = self.clock(), {"taken_per_s": round(taken_per_s, 3), "starved": starved}
        self._write(self._entry)
        self.most = max(self.most, 1 + len(self._read()))

    def others(self) -> list[tuple[float, bool]]:
        """The other live processes' entries: (what each took lately per second, whether it started starved)."""
        return [(float(e["taken_per_s"]), bool(e["starved"])) for e in self._read()]

    def close(self) -> None:
        """This process is done on the key: its entry goes."""
        if self.directory is not None:
            (self.directory / f"{self.name}.json").unlink(missing_ok=True)

    def _write(self, entry: dict) -> None:
        path = self.directory / f"{self.name}.json"
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(entry))
            os.replace(tmp, path)  # a reader sees the old entry or the new one, never half of one
        except OSError:
            pass  # a full disk: the others read this entry as stale soon (the run itself goes on)

    def _read(self) -> list[dict]:
        out, wall = [], time.time()
        try:
            paths = [p for p in self.directory.glob("*.json") if p.stem != self.name]
        except OSError:
            return []
        for p in paths:
            try:
                if wall - p.stat().st_mtime > self.STALE_S:
                    continue
                entry = json.loads(p.read_text())
                if isinstance(entry, dict) and isinstance(entry.get("taken_per_s"), (int, float)) and \
                        math.isfinite(entry["taken_per_s"]) and entry["taken_per_s"] >= 0:
                    out.append(entry)
            except (OSError, ValueError):
                continue  # gone between the listing and the read, or being replaced
        return out


class MemoryBoard(KeyBoard):
    """A board held in a dict that several limiters of one process share: the fake-clock model's two processes."""

    def __init__(self, entries: dict, name: str, clock: Callable[[], float]):
        super().__init__(None, clock)
        self.entries, self.name = entries, name

    def _write(self, entry: dict) -> None:
        self.entries[self.name] = (self.clock(), entry)

    def _read(self) -> list[dict]:
        now = self.clock()
        return [e for name, (t, e) in self.entries.items() if name != self.name and now - t <= self.STALE_S]

    def close(self) -> None:
        self.entries.pop(self.name, None)


class BoardMember(PacedLimiter):
    """A PacedLimiter on a key's board: it writes what it took, and once a process on the key started starved, no
    cut and no spent quota's pace sets its ceiling under an equal share of what the processes took lately."""

    SHARE_S = PacedLimiter.PROBE_MAX_S / 2  # what a process took lately: over this long (a round trip at least)

    def __init__(self, start: int, cap: int, board: KeyBoard, clock: Callable[[], float] = time.perf_counter,
                 max_rate: float | None = None):
        super().__init__(start, cap, clock, max_rate)
        self.board, self.starved = board, False

    def finish(self, kind, latency=None, tag="", retry_after=None, sent_in_flight=None) -> None:
        super().finish(kind, latency, tag, retry_after, sent_in_flight)
        if kind == "rate" and not self._taken and not self.in_flight:
            self.starved = True  # every send of its start refused, nothing out: another keeps the cap spent
        if self.board.due(self.starved):  # (the take is counted only when an entry is owed: not per answer)
            self.board.publish(self.recent_rate(self.clock()), self.starved)

    def stats(self) -> dict:
        """summary.json's concurrency block, with the board's part: the most processes on the key at once (another
        process's sends were the key's too), and whether this one started starved."""
        return {**super().stats(), "key_board": {"processes_seen": self.board.most, "started_starved": self.starved}}

    def recent_rate(self, now: float) -> float:
        """Requests per second the server took of this process's over the last SHARE_S seconds."""
        if not self._sends:
            return 0.0
        since = max(now - self.SHARE_S, self._first)
        return taken_since(self, since) / max(now - since, self._rtt)

    def share(self, now: float) -> float:
        """An equal share of what the processes on the key took lately, once one of them started starved (else 0)."""
        others = self.board.others()
        if not others or not (self.starved or any(s for _, s in others)):
            return 0.0
        return (self.recent_rate(now) + sum(r for r, _ in others)) / (1 + len(others))

    def _cut(self, now: float, ceiling: float, reason: str) -> None:
        share = self.share(now)
        if share > ceiling:
            ceiling, reason = share, f"{reason} (an equal share of the key's processes)"
        super()._cut(now, ceiling, reason)

    def _end_refusal(self, now: float) -> None:
        super()._end_refusal(now)
        share = self.share(now) if self._spent_s else 0.0  # a spent quota's pace: what this process took alone
        if share > self._r_ceiling:
            self._r_ceiling = share
            self._record(now, "a spent quota's pace: an equal share of the key's processes")
