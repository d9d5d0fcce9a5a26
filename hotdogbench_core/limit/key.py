"""The shared view of the models of one run on one key (the session gives every ModelRun of a run the same one)."""
from __future__ import annotations


class KeyCoordinator:
    """What the models of one run on one key share: what the key took. It never makes a model cut or skip a cut
    (a model behind a cap of its own must not be slowed by the others); it gives a model's first cut a floor: an
    equal share of what the key took lately. A model refused from its first sends (another took the burst of a
    key-wide cap) so starts at its share, not at a probe's crawl; behind a cap of its own, its next cut finds
    that cap. While a member is starved so, that share is also the ceiling of a first cut (the model that took
    the burst would keep it otherwise: fairness is decided in the first seconds). Measured and rejected
    (docs/limiter.md): telling a key-wide cap from caps of their own by refusals that coincide, skipping the cuts
    of shares under the mean, probing in turns or n times less often."""

    def __init__(self):
        self.members: list = []  # the PacedLimiters of the run

    def starved(self) -> bool:
        """A member was refused and took nothing, with nothing out: another took the burst of a key-wide cap (behind
        a cap of its own, a model's first sends take that cap's burst)."""
        return any(m.throttles and not m._taken and not m.in_flight for m in self.members)

    def share(self, now: float) -> float:
        """An equal share of what the key took over the last PROBE_MAX_S / 2 seconds (a round trip at least), over
        the members that sent lately."""
        live = [m for m in self.members if m._sends and m._sends[-1] > now - m.PROBE_MAX_S]
        if not live:
            return 0.0
        since = max(now - live[0].PROBE_MAX_S / 2, min(m._first for m in live))
        n = sum(sum(1 for t in m._sends if t >= since) - sum(1 for t, _ in m._refusals if t >= since) for m in live)
        return max(0.0, n) / max(now - since, min(m._rtt for m in live)) / len(live)
