"""The AWS SDK's adaptive retry mode as a baseline limiter: botocore's own ClientRateLimiter on a fake clock.

botocore (the `bench` dependency group) wires it in `botocore.retries.adaptive.register_retry_handler`: a
`throttling.CubicCalculator`, a `standard.RateClocker` on the responses, a `bucket.TokenBucket` for the sends, all
reading one clock object (`current_time()`). The same objects are built here on the benchmark's clock; the blocking
`TokenBucket.acquire` becomes a gate (`wait_time`): the time until the bucket holds a token at its fill rate. The
SDK has no in-flight limit (the runner's max concurrency is its window). Retries follow botocore's standard mode:
rand() x min(20 s, base x 2^(attempt-1)), base 1 s for throttles and 50 ms otherwise; it reads `x-amz-retry-after`
only, so a standard Retry-After or a reset hint is not waited for.
"""
from __future__ import annotations

import math

if __name__ == "__main__":  # a module, not a benchmark: say what it is (before botocore, which --help needs not)
    import argparse
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                            usage="imported by bench_families.py (uv run --group bench ...)").parse_args()

from botocore.exceptions import CapacityNotAvailableError
from botocore.retries import adaptive, bucket, standard, throttling

from hotdogbench_core.limit.aimd import LimitHistory


class _Clock:
    def __init__(self, clock):
        self._clock = clock

    def current_time(self):
        return self._clock()

    def sleep(self, amount):  # never called: the gate waits instead
        raise RuntimeError("the benchmark's clock does not sleep")


class _Detector:
    def is_throttling_error(self, **kwargs):
        return kwargs["throttled"]


class AwsAdaptiveLimiter(LimitHistory):
    POLICY = "aws-adaptive"
    RETRY_BASE_S = 1.0  # botocore's throttling base scale

    def __init__(self, start: int, cap: int, clock):
        super().__init__(clock)
        c = _Clock(clock)
        self.cap = cap
        self.bucket = bucket.TokenBucket(max_rate=1, clock=c)
        self.lim = adaptive.ClientRateLimiter(
            rate_adjustor=throttling.CubicCalculator(starting_max_rate=0, start_time=c.current_time()),
            rate_clocker=adaptive.RateClocker(c), token_bucket=self.bucket, throttling_detector=_Detector(), clock=c)
        self.in_flight = self.throttles = self.transport_errors = 0

    @property
    def limit(self) -> int:
        return self.cap

    def wait_time(self, now=None) -> float:
        if self.in_flight >= self.cap:
            return math.inf
        if not self.lim._enabled:
            return 0.0
        b = self.bucket
        b._refill()
        need = 1 - b._current_capacity
        return 0.0 if need <= 1e-9 else need / b._fill_rate

    def start(self, now=None) -> int:
        if self.lim._enabled:
            try:
                self.bucket.acquire(1, block=False)
            except CapacityNotAvailableError:  # short by a rounding error (the gate said a token was there)
                self.bucket._current_capacity -= 1
        self.in_flight += 1
        return self.in_flight

    def finish(self, kind, latency=None, tag="", retry_after=None, sent_in_flight=None) -> None:
        self.in_flight -= 1
        self.throttles += kind == "rate"
        self.transport_errors += kind == "transport"
        self.lim.on_receiving_response(throttled=kind == "rate")

    @staticmethod
    def backoff(attempts: int, signal: str, retry_after, rng) -> float:
        """botocore standard mode: rand() x min(20, base x 2^(attempt - 1)); Retry-After not read."""
        base = 1.0 if signal == "rate" else 0.05
        return rng.random() * min(20.0, base * 2 ** (attempts - 1))

    def stated(self, rate: float) -> None:
        """A cap the server states: botocore reads none (its bucket's rate comes from throttles alone)."""

    def stats(self) -> dict:
        return {"policy": self.POLICY, "throttles": self.throttles, "fill_rate": self.bucket.max_rate}
