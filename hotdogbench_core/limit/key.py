"""The shared view of the models of one run on one key (the session gives every ModelRun of a run the same one)."""
from __future__ import annotations

import math


class KeyCoordinator:
    """What the models of one run on one key share: their paces. A model paced under BETA x the key's mean does not
    cut on a refusal: on a key-wide cap the larger shares cut instead, and decreases that fall on the larger shares
    converge to equal ones (Chiu and Jain). No model is ever made to cut, so one behind a cap of its own is not
    slowed: if that cap refuses it in a row, the refusal pause and the pace after it (what was taken) answer it."""

    def __init__(self):
        self.members: list = []  # the PacedLimiters of the run

    def share(self, now: float) -> float:
        """An equal share of what the key took over the last PROBE_MAX_S / 2 seconds (the start of a model refused
        from its first send: on a key-wide cap, its share; behind a cap of its own, its first cut finds that)."""
        live = [m for m in self.members if m._sends and m._sends[-1] > now - m.PROBE_MAX_S]
        since = max(now - self.members[0].PROBE_MAX_S / 2, min(m._first for m in live))
        n = sum(sum(1 for t in m._sends if t >= since) - sum(1 for t in m._refusals if t >= since) for m in live)
        return max(0.0, n) / max(now - since, min(m._rtt for m in live)) / max(1, len(live))  # (a round trip)
