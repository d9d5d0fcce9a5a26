"""A spending cap for a run: no new request once the cost spent plus what is in flight could pass it."""
from __future__ import annotations

import math
from typing import Literal

from .settings import SettingsError

Decision = Literal["go", "wait", "stop"]
UNPRICED_ANSWERS = 3  # answers in a row without a cost: the server reports none, the budget cannot be kept


class CostBudget:
    """Shared by every model of a run. A request's cost is estimated as the dearest seen for its model so far;
    until a model's first cost is known only one of its requests may be in flight (a probe)."""

    def __init__(self, max_cost_usd: float, spent_usd: float = 0.0):
        if isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, (int, float)) \
                or not math.isfinite(max_cost_usd) or not max_cost_usd > 0:
            raise SettingsError(f"must be a number of USD above 0, got {max_cost_usd!r}", "max_cost_usd")
        self.max_cost_usd = max_cost_usd
        self.spent_usd = spent_usd
        self.reserved_usd = 0.0
        self._per_request: dict[str, float] = {}
        self._probes: dict[str, int] = {}
        self._unpriced: dict[str, int] = {}  # answers in a row that came without a cost, per model

    def estimate(self, model: str) -> float | None:
        return self._per_request.get(model)

    def reserve(self, model: str) -> tuple[Decision, float]:
        """Before a send: go (with the amount reserved), wait (a probe is out), or stop (it could pass the cap)."""
        if self.spent_usd >= self.max_cost_usd:
            return "stop", 0.0
        est = self._per_request.get(model)
        if est is None:
            if self._probes.get(model, 0):
                return "wait", 0.0
            self._probes[model] = self._probes.get(model, 0) + 1
            return "go", 0.0
        if self.spent_usd + self.reserved_usd + est > self.max_cost_usd:
            return "stop", 0.0
        self.reserved_usd += est
        return "go", est

    def unenforceable(self, model: str) -> bool:
        """Have this model's answers come back without a cost often enough to say the server reports none?"""
        return self._unpriced.get(model, 0) >= UNPRICED_ANSWERS

    def settle(self, model: str, reserved: float, cost: float | None, answered: bool = False) -> None:
        """After a request ends, whatever its outcome: release its reservation and book what it cost."""
        if answered:
            self._unpriced[model] = 0 if cost is not None else self._unpriced.get(model, 0) + 1
        if reserved:
            self.reserved_usd = max(0.0, self.reserved_usd - reserved)
        elif self._probes.get(model):
            self._probes[model] -= 1
        if cost:
            self.spent_usd += cost
            self._per_request[model] = max(cost, self._per_request.get(model, 0.0))
