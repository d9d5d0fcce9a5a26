"""Scenario families for the limiter: each family is a set of seeded draws over its parameters.

    from scenarios import FAMILIES, draw
    d = draw("window", seed=7)   # a Draw: its parameters (d.params) and d.make() -> fresh servers for one run

A draw is deterministic in (family, seed). make() builds new cap objects every time (caps hold state), so every
policy meets the same server from the same start. Seeds HELD_OUT are never used while tuning (bench_families.py
reports them apart); tuning draws use seeds from 0 up.

What the families cover (ISSUE 10): token buckets with a burst of 0-10x the rate, and with none at all (`strict`:
nginx's default, met against a real nginx before the families had it), in-flight caps (429 or a 402 in-flight
budget), both at once, fixed clock-aligned windows (N per 10 s or per minute), and windows that start at the
client's first request after the last one ended (`client_window`: express-rate-limit's store, LiteLLM's ttl), and
sliding windows (`sliding`: the `limits` library's moving window and sliding-window counter, under Flask-Limiter),
and windows that count their refusals too (`counted`: HAProxy's stick table, as its guides set it), and a bucket
with a queue in front (`queued`: nginx's limit_req with a burst and no nodelay: requests past the rate wait their
turn, refused only past the queue);
Retry-After none / exact / fixed small (0.5-2 s) / fixed large (5-60 s on some 429s only), its other forms (an
HTTP-date, retry-after-ms) and the reset hints sent instead of it (Gemini's in its error's details, the IETF
RateLimit fields); caps that move (a fall to 30-70% and a recovery, a slow drift, an oscillation, a halving then a
doubling); 2-8 models behind one key-wide cap or behind caps of their own, and two processes on one key (on its cap,
or each behind a cap of its own: `own_processes`, where the board the two share must hold neither over its own cap);
latency 0.1-5 s, and latency that grows with load; failure noise (5xx, 200-errors, drops) 0-8% and random 402s; a
loaded client, which hears answers a few ms after the server let them go (`loaded`); and a loaded gateway, whose
latency grows with load and whose refusals come as slow as its answers (`gateway`); and caps slower than a request
every half second (`slow`: a free model's 20 per minute, a bucket at 0.2/s), where a probe spans seconds per send.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable

from hotdogbench_core.sim.capmodel import Cap, Server, drift, oscillate, step

MAX_CONCURRENCY = 256  # the runner's default: no draw may need more than ~70% of it in flight
HELD_OUT = tuple(range(10_000, 10_010))  # never tuned on


@dataclass
class Setup:
    """What one run meets: one Server and a photo count per client, and how to score it."""
    servers: list[Server]
    photos: list[int]
    measure: list[list[Cap]]  # per client: the caps its utilization is judged against (the binding path)
    shared: bool = False  # the clients' caps are one key-wide cap (judged together, fairness among them)
    processes: bool = False  # the clients are separate processes (no coordinator among them)
    halve_at: float | None = None  # seconds: the cap halves here ...
    double_at: float | None = None  # ... and doubles back here
    mean_latency: float = 0.2
    models: list[str] | None = None  # the clients' model ids where they matter (OpenRouter's free variants)


@dataclass
class Draw:
    family: str
    seed: int
    params: dict
    make: Callable[[], Setup] = field(repr=False)

    def describe(self) -> str:
        return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())


def _logu(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _latency(rng: random.Random, lo=0.1, hi=5.0) -> tuple[float, float]:
    return _logu(rng, lo, hi), rng.uniform(0.2, 0.6)


def _mean(lat: float, sigma: float) -> float:
    return lat * math.exp(sigma * sigma / 2)


def _rate_for(rng: random.Random, mean_lat: float, lo: float, hi: float) -> float:
    """A rate cap the runner can reach: at most 70% of MAX_CONCURRENCY in flight at this latency."""
    return _logu(rng, lo, max(lo * 1.01, min(hi, 0.7 * MAX_CONCURRENCY / mean_lat)))


def _ra(rng: random.Random, modes=("none", "exact", "fixed")) -> dict:
    mode = rng.choice(modes)
    return {"retry_after": mode, "retry_after_s": round(rng.uniform(0.5, 2.0), 1) if mode == "fixed" else 1.0}


def _photos(rate: float, seconds: float, extra: float = 0.0, latency: float = 0.0) -> int:
    """Enough photos for `seconds` at the cap, and for at least 30 round trips (a slow start takes ~5)."""
    return max(50, int(rate * max(seconds, 30 * latency) + extra))


# -- the families --------------------------------------------------------------------------------------------
def _bucket(rng, seed):
    lat, sigma = _latency(rng)
    rate = _rate_for(rng, _mean(lat, sigma), 5, 200)
    burst = max(1.0, round(rng.uniform(0, 10) * rate))
    ra = _ra(rng)
    p = dict(rate=rate, burst=burst, latency=lat, sigma=sigma, **ra)
    return p, _one_bucket(rate, burst, lat, sigma, ra, extra=burst)


def _one_bucket(rate: float, burst: float, lat: float, sigma: float, ra: dict, extra: float):
    """make() for one model behind one bucket: photos for 40 s at its rate, and `extra` more."""
    mean = _mean(lat, sigma)
    return lambda: Setup([Server([c := Cap("bucket", rate=rate, burst=burst, **ra)], latency=lat, sigma=sigma)],
                         [_photos(rate, 40, extra, mean)], [[c]], mean_latency=mean)


def _queued(rng, seed):
    """nginx's limit_req as its documentation sets it: a rate with a burst and no `nodelay`. Requests past the rate
    are held in a queue of 5-50 and let through at the rate, refused (with no Retry-After) only past it; with
    `delay=` some of the burst passes at once. Filling the queue costs no refusal, but every answer then waits
    queue / rate s more, and the run's latency figures become the queue's."""
    lat, sigma = _latency(rng, 0.1, 2.0)
    mean = _mean(lat, sigma)
    rate = _rate_for(rng, mean, 2, 50)
    burst = rng.randint(5, 50)
    at_once = rng.randint(1, burst - 1) if rng.random() < 0.3 else 0  # nginx's delay=: passed at once, not held
    p = dict(rate=rate, burst=burst, delay=at_once, latency=lat, sigma=sigma)
    return p, lambda: Setup([Server([c := Cap("bucket", rate=rate, burst=at_once + 1, queue=burst - at_once)],
                                    latency=lat, sigma=sigma)], [_photos(rate, 40, burst, mean)], [[c]],
                            mean_latency=mean)


def _strict(rng, seed):
    """A bucket with no burst, as nginx's limit_req by default: a send sooner than 1 / rate after the last one taken
    is refused (`bucket` draws its burst up to 10x the rate, so this case is there about once in a hundred)."""
    lat, sigma = _latency(rng, 0.1, 2.0)
    mean = _mean(lat, sigma)
    rate = _rate_for(rng, mean, 2, 100)
    ra = _ra(rng)
    p = dict(rate=rate, latency=lat, sigma=sigma, **ra)
    return p, _one_bucket(rate, 1.0, lat, sigma, ra, extra=0)


def _window(rng, seed, modes=("none", "exact", "fixed")):
    period = rng.choice((10.0, 60.0))
    lat, sigma = _latency(rng, 0.1, 2.0)
    rate = _rate_for(rng, _mean(lat, sigma), 2 if period == 60 else 5, 20 if period == 60 else 100)
    n = max(20, round(rate * period))
    phase = round(rng.uniform(0, period), 2)
    ra = _ra(rng, modes)
    if ra["retry_after"] == "gateway":
        ra["retry_after_s"] = 60.0  # LiteLLM: llm_provider-retry-after: 60, whatever the real wait
    seconds = max(4 * period, 40)
    p = dict(period=period, n=n, phase=phase, latency=lat, sigma=sigma, **ra)
    return p, lambda: Setup([Server([c := Cap("window", n=n, period=period, phase=phase, **ra)], latency=lat,
                                    sigma=sigma)], [_photos(n / period, seconds + period)], [[c]],
                            mean_latency=_mean(lat, sigma))


def _client_window(rng, seed):
    """N requests a window that starts at the client's first request after the last window ended, not on the clock:
    express-rate-limit's memory store (found against it: 9.6% refused, found alone) and LiteLLM's ttl. Its refusals
    carry Retry-After to the window's end, a reset hint, the IETF RateLimit fields, a fixed value or nothing."""
    period = rng.choice((5.0, 10.0, 60.0))
    lat, sigma = _latency(rng, 0.1, 2.0)
    rate = _rate_for(rng, _mean(lat, sigma), 2 if period == 60 else 5, 20 if period == 60 else 100)
    n = max(20, round(rate * period))
    ra = _ra(rng, ("none", "exact", "fixed", "reset_ms", "ratelimit"))
    seconds = max(4 * period, 40)
    p = dict(period=period, n=n, latency=lat, sigma=sigma, **ra)
    return p, lambda: Setup([Server([c := Cap("window", n=n, period=period, phase=-math.inf, from_first=True, **ra)],
                                    latency=lat, sigma=sigma)], [_photos(n / period, seconds + period)], [[c]],
                            mean_latency=_mean(lat, sigma))


def _sliding(rng, seed):
    """N requests in any `period` s: a sliding log (the `limits` library's moving window, under Flask-Limiter and
    slowapi) or a sliding-window counter (limits', Cloudflare's: the clock window's count plus the last one's
    weighted by its share still inside the period). Refusals carry nothing, the exact wait, or Flask-Limiter's
    headers (Retry-After in whole seconds truncated: 0 for a wait that ends inside the clock's second)."""
    period = rng.choice((1.0, 10.0, 60.0))
    lat, sigma = _latency(rng, 0.1, 2.0)
    rate = _rate_for(rng, _mean(lat, sigma), 2 if period == 60 else 5, 20 if period == 60 else 100)
    n = max(5 if period == 1 else 20, round(rate * period))
    slide = rng.choice(("log", "counter"))
    phase = round(rng.uniform(0, period), 2)
    ra = _ra(rng, ("none", "exact", "flask"))
    seconds = max(4 * period, 40)
    p = dict(period=period, n=n, slide=slide, latency=lat, sigma=sigma, **ra)
    return p, lambda: Setup([Server([c := Cap("window", n=n, period=period, phase=phase, slide=slide, **ra)],
                                    latency=lat, sigma=sigma)], [_photos(n / period, seconds + period)], [[c]],
                            mean_latency=_mean(lat, sigma))


def _counted(rng, seed):
    """A window that counts its refusals too: HAProxy's stick table as its guides set it (`track-sc0` before
    `deny if { sc_http_req_rate(0) gt N }`), a sliding-window counter over 1-60 s refused with a bare 429; or a
    fixed window counting so. A client that keeps asking while refused keeps itself refused."""
    period = rng.choice((1.0, 10.0, 60.0))
    lat, sigma = _latency(rng, 0.1, 2.0)
    rate = _rate_for(rng, _mean(lat, sigma), 2 if period == 60 else 5, 20 if period == 60 else 100)
    n = max(5 if period == 1 else 20, round(rate * period))
    slide = rng.choice(("counter", "counter", ""))
    phase = round(rng.uniform(0, period), 2)
    seconds = max(4 * period, 40)
    p = dict(period=period, n=n, slide=slide or "fixed", latency=lat, sigma=sigma)
    return p, lambda: Setup([Server([c := Cap("window", n=n, period=period, phase=phase, slide=slide,
                                              counts_refused=True)], latency=lat, sigma=sigma)],
                            [_photos(n / period, seconds + period)], [[c]], mean_latency=_mean(lat, sigma))


def _hints(rng, seed):
    """A window whose refusals carry a reset hint instead of Retry-After, or the exact wait in Retry-After's other
    forms (an HTTP-date in whole seconds, Azure's retry-after-ms), or in a Google API error's details (Gemini's), or
    the IETF RateLimit fields (the window's policy and the seconds to its refill, as express-rate-limit sends)."""
    return _window(rng, seed, ("reset_ms", "reset_requests", "gateway", "http_date", "retry_after_ms", "google",
                               "ratelimit"))


def _inflight(rng, seed):
    lat, sigma = _latency(rng)
    n = rng.randint(4, 64)
    status = rng.choice((429, 402))
    ra = {"retry_after": "fixed", "retry_after_s": 1.0} if status == 402 else _ra(rng)
    mean = _mean(lat, sigma)
    p = dict(n=n, status=status, latency=lat, sigma=sigma, **ra)
    return p, lambda: Setup([Server([c := Cap("inflight", n=n, status=status, **ra)], latency=lat, sigma=sigma)],
                            [_photos(n / mean, 40, 0, mean)], [[c]], mean_latency=mean)


def _loaded(rng, seed):
    """An in-flight cap met by a loaded client: its event loop hears an answer 2-30 ms after the server let it go,
    so it counts one more in flight now and then (found by CI: behind nginx's limit_conn of 3 on a busy 2-core
    machine, 75% used where a quiet one gets 95%)."""
    lat, sigma = _latency(rng, 0.1, 2.0)
    n = rng.randint(2, 16)
    lag = _logu(rng, 0.002, 0.03)
    mean = _mean(lat, sigma)
    p = dict(n=n, client_lag=lag, latency=lat, sigma=sigma)
    return p, lambda: Setup([Server([c := Cap("inflight", n=n)], latency=lat, sigma=sigma, client_lag=lag)],
                            [_photos(n / mean, 40, 0, mean)], [[c]], mean_latency=mean)


def _both(rng, seed):
    lat, sigma = _latency(rng)
    mean = _mean(lat, sigma)
    n = rng.randint(8, 64)
    rate = n / mean * rng.uniform(0.6, 1.4)
    burst = max(1.0, round(rng.uniform(0, 3) * rate))
    ra = _ra(rng)
    p = dict(n=n, rate=rate, burst=burst, latency=lat, sigma=sigma, **ra)

    def make():
        caps = [Cap("inflight", n=n, **ra), Cap("bucket", rate=rate, burst=burst, **ra)]
        return Setup([Server(caps, latency=lat, sigma=sigma)], [_photos(min(rate, n / mean), 40, burst, mean)], [caps],
                     mean_latency=mean)
    return p, make


def _large_ra(rng, seed):
    lat, sigma = _latency(rng, 0.1, 2.0)
    value, share = round(rng.uniform(5, 60)), round(rng.uniform(0.05, 0.3), 2)
    if rng.random() < 0.5:
        rate = _rate_for(rng, _mean(lat, sigma), 5, 200)
        burst = max(1.0, round(rng.uniform(0, 3) * rate))
        p = dict(cap="bucket", rate=rate, burst=burst, ra_s=value, share=share, latency=lat, sigma=sigma)
        make_cap = lambda: Cap("bucket", rate=rate, burst=burst, retry_after="large", retry_after_s=value,
                               large_share=share)
        photos = _photos(rate, 40, burst)
    else:
        rate = _rate_for(rng, _mean(lat, sigma), 5, 100)
        n = max(20, round(rate * 10))
        p = dict(cap="window 10 s", n=n, ra_s=value, share=share, latency=lat, sigma=sigma)
        make_cap = lambda: Cap("window", n=n, period=10.0, phase=1.3, retry_after="large", retry_after_s=value,
                               large_share=share)
        photos = _photos(n / 10, 50)

    def make():
        c = make_cap()
        return Setup([Server([c], latency=lat, sigma=sigma)], [photos], [[c]], mean_latency=_mean(lat, sigma))
    return p, make


def _moving(rng, seed):
    lat, sigma = _latency(rng, 0.1, 2.0)
    rate = _rate_for(rng, _mean(lat, sigma), 5, 150)
    kind = rng.choice(("fall", "drift", "oscillation"))
    if kind == "fall":
        depth, at, dur = round(rng.uniform(0.3, 0.7), 2), round(rng.uniform(10, 20), 1), round(rng.uniform(10, 25))
        scale, p = step(at, depth, at + dur), dict(move="fall", to=depth, at=at, lasting=dur)
    elif kind == "drift":
        to, over = round(rng.uniform(0.5, 1.6), 2), round(rng.uniform(30, 60))
        scale, p = drift(5, to, over), dict(move="drift", to=to, over=over)
    else:
        period, depth = round(rng.uniform(10, 40)), round(rng.uniform(0.3, 0.6), 2)
        scale, p = oscillate(period, depth), dict(move="oscillation", period=period, depth=depth)
    ra = _ra(rng)
    p.update(rate=rate, latency=lat, sigma=sigma, **ra)
    return p, lambda: Setup([Server([c := Cap("bucket", rate=rate, burst=max(1.0, rate / 2), scale=scale, **ra)],
                                    latency=lat, sigma=sigma)], [_photos(rate, 60)], [[c]],
                            mean_latency=_mean(lat, sigma))


def _step(rng, seed):
    lat, sigma = _latency(rng, 0.1, 1.0)
    rate = _rate_for(rng, _mean(lat, sigma), 10, 150)
    halve, double = round(rng.uniform(15, 25), 1), round(rng.uniform(35, 45), 1)
    ra = _ra(rng)
    p = dict(rate=rate, halve_at=halve, double_at=double, latency=lat, sigma=sigma, **ra)
    scale = step(halve, 0.5, double)
    return p, lambda: Setup([Server([c := Cap("bucket", rate=rate, burst=max(1.0, rate / 4), scale=scale, **ra)],
                                    latency=lat, sigma=sigma)], [_photos(rate, 60)], [[c]], halve_at=halve,
                            double_at=double, mean_latency=_mean(lat, sigma))


def _latency_family(rng, seed):
    lat, sigma = _latency(rng)
    growth = round(rng.uniform(0, 1.0), 2)
    base = _mean(lat, sigma)
    # the server's latency grows with the requests it holds: mean = base x (1 + growth x rate x mean / 100) at the
    # cap's rate, so mean = base / (1 - growth x rate x base / 100); the rate is drawn so that the requests in flight
    # it needs (rate x mean) stay under 70% of MAX_CONCURRENCY
    rate = _rate_for(rng, base * (1 + 0.7 * MAX_CONCURRENCY / 100 * growth), 5, 150)
    mean = base / (1 - growth * rate * base / 100)
    ra = _ra(rng)
    p = dict(rate=rate, latency=lat, sigma=sigma, growth_per_100=growth, **ra)
    return p, lambda: Setup([Server([c := Cap("bucket", rate=rate, burst=max(1.0, rate / 2), **ra)], latency=lat,
                                    sigma=sigma, load_latency=growth, load_ref=100)], [_photos(rate, 40, 0, mean)], [[c]],
                            mean_latency=mean)


def _gateway(rng, seed):
    """A gateway on a loaded machine (the LiteLLM proxy on 2 cores, 2026-12-03: 0.4 s at 10 in flight, 2.1 s at
    80): its latency grows with what it holds, and its refusals come through the same queue, as slow as answers. Its
    limit is a bucket, or a fixed window per minute whose 429s carry a gateway's llm_provider-retry-after: 60."""
    lat, sigma = _latency(rng, 0.05, 1.0)
    growth = round(rng.uniform(0.2, 2.0), 2)
    base = _mean(lat, sigma)
    rate = _rate_for(rng, base * (1 + 0.7 * MAX_CONCURRENCY / 100 * growth), 2, 100)
    mean = base / (1 - growth * rate * base / 100)  # (as in the latency family)
    window = rng.random() < 0.5
    ra = {"retry_after": "gateway", "retry_after_s": 60.0} if window else _ra(rng, ("none", "exact"))
    p = dict(cap="window 60 s" if window else "bucket", rate=rate, latency=lat, sigma=sigma, growth_per_100=growth,
             **ra)

    def make():
        cap = Cap("window", n=max(20, round(rate * 60)), period=60.0, phase=round(seed * 7.3 % 60, 2), **ra) \
            if window else Cap("bucket", rate=rate, burst=max(1.0, rate / 2), **ra)
        return Setup([Server([cap], latency=lat, sigma=sigma, load_latency=growth, load_ref=100,
                             reject_latency=None)], [_photos(rate, 240 if window else 40, 0, mean)], [[cap]],
                     mean_latency=mean)
    return p, make


def _slow(rng, seed):
    """A cap of 0.2-2 requests per second that no id or header tells (a provider's small limit; a free model's 20 a
    minute behind a gateway's alias): a window per clock minute, or a bucket with a burst of 1-20, behind latency
    of 0.5-5 s. A send is seconds apart, so a probe cycle of a few
    seconds is less than one send."""
    lat, sigma = _latency(rng, 0.5, 5.0)
    mean = _mean(lat, sigma)
    rate = _logu(rng, 0.2, 2.0)
    window = rng.random() < 0.5
    ra = _ra(rng, ("none", "exact", "fixed", "reset_ms"))
    if window:
        n = max(12, round(rate * 60))
        phase = round(rng.uniform(0, 60), 2)
        p = dict(cap="window 60 s", n=n, phase=phase, latency=lat, sigma=sigma, **ra)
        make_cap = lambda: Cap("window", n=n, period=60.0, phase=phase, **ra)
        photos = _photos(n / 60, 300)
    else:
        burst = float(rng.randint(1, 20))
        p = dict(cap="bucket", rate=rate, burst=burst, latency=lat, sigma=sigma, **ra)
        make_cap = lambda: Cap("bucket", rate=rate, burst=burst, **ra)
        photos = _photos(rate, 200, burst, mean)

    def make():
        c = make_cap()
        return Setup([Server([c], latency=lat, sigma=sigma)], [photos], [[c]], mean_latency=mean)
    return p, make


def _free(rng, seed):
    """OpenRouter's free models: 20 requests a clock minute on the key (shared by the 1-4 models of a run), refused
    with its 429s (no Retry-After; X-RateLimit-Limit and -Reset in the body, the quota named free-models-per-min,
    read by the runner's classifier: a pace of one under the count a minute from the first refusal on), latency
    0.5-5 s. Their ids end in ":free", as OpenRouter's do, so the runner paces them under the key's 20 a minute
    from the first send (protocol.models.known_rates)."""
    k = rng.randint(1, 4)
    lat, sigma = _latency(rng, 0.5, 5.0)
    mean = _mean(lat, sigma)
    phase = round(rng.uniform(0, 60), 2)
    p = dict(models=k, n=20, phase=phase, latency=lat, sigma=sigma)

    def make():
        cap = Cap("window", n=20, period=60.0, phase=phase, retry_after="openrouter")
        return Setup([Server([cap], latency=lat, sigma=sigma) for _ in range(k)], [_photos(20 / 60 / k, 300)] * k,
                     [[cap]] * k, shared=k > 1, mean_latency=mean, models=[f"vendor/model-{i}:free" for i in range(k)])
    return p, make


def _noise(rng, seed):
    lat, sigma = _latency(rng, 0.1, 2.0)
    rate = _rate_for(rng, _mean(lat, sigma), 5, 150)
    total = rng.uniform(0, 0.08)
    parts = [rng.random() for _ in range(3)]
    e5, e200, drop = (total * x / sum(parts) for x in parts)
    r402 = round(rng.choice((0.0, rng.uniform(0, 0.02))), 4)
    ra = _ra(rng)
    p = dict(rate=rate, failures=total, refuse_402=r402, latency=lat, sigma=sigma, **ra)
    return p, lambda: Setup([Server([c := Cap("bucket", rate=rate, burst=max(1.0, rate / 2), **ra)], latency=lat,
                                    sigma=sigma, error_5xx=e5, error_200=e200, drop=drop, refuse_402=r402)],
                            [_photos(rate, 40)], [[c]], mean_latency=_mean(lat, sigma))


def _several(rng, seed, shared: bool, processes: bool = False):
    k = 2 if processes else rng.randint(2, 8)
    lat, sigma = _latency(rng, 0.1, 2.0)
    mean = _mean(lat, sigma)
    window = rng.random() < 0.3
    ra = _ra(rng)
    if shared:
        rate = _rate_for(rng, mean * k, 10, 200)  # every model may need its share in flight
        p = dict(models=k, cap="window 10 s" if window else "bucket", rate=rate, latency=lat, sigma=sigma, **ra)

        def make():
            cap = Cap("window", n=max(20, round(rate * 10)), period=10.0, phase=3.1, **ra) if window else \
                Cap("bucket", rate=rate, burst=max(1.0, rate / 2), **ra)
            return Setup([Server([cap], latency=lat, sigma=sigma) for _ in range(k)],
                         [_photos(rate / k, 50 if window else 40)] * k, [[cap]] * k, shared=True,
                         processes=processes, mean_latency=mean)
    else:
        rates = [_rate_for(rng, mean, 5, 150) for _ in range(k)]
        p = dict(models=k, cap="own buckets", rates="/".join(f"{r:.0f}" for r in rates), latency=lat, sigma=sigma,
                 **ra)

        def make():
            caps = [Cap("bucket", rate=r, burst=max(1.0, r / 2), **ra) for r in rates]
            return Setup([Server([c], latency=lat, sigma=sigma) for c in caps], [_photos(r, 40) for r in rates],
                         [[c] for c in caps], mean_latency=mean, processes=processes)
    return p, make


FAMILIES: dict[str, tuple[str, Callable]] = {
    "bucket": ("token bucket 5-200/s, burst 0-10x, Retry-After none/exact/fixed", _bucket),
    "strict": ("token bucket 2-100/s with no burst (nginx's limit_req default)", _strict),
    "window": ("fixed window per 10 s or per minute, Retry-After none/exact/fixed", _window),
    "client_window": ("fixed window from the client's first request (express-rate-limit's store, LiteLLM's ttl)",
                      _client_window),
    "sliding": ("sliding window: a log (limits' moving window) or a counter; none, exact or Flask-Limiter's hints",
                _sliding),
    "counted": ("a window that counts its refusals too (HAProxy's http_req_rate): a sliding counter or fixed",
                _counted),
    "queued": ("nginx's limit_req with a burst and no nodelay: past the rate, a queue of 5-50, then refusals",
               _queued),
    "hints": ("fixed window, reset hints instead of Retry-After, an HTTP-date, retry-after-ms, Gemini's, IETF's",
              _hints),
    "inflight": ("in-flight cap 4-64 (429 or 402 budget)", _inflight),
    "loaded": ("in-flight cap 2-16 met by a loaded client: answers heard 2-30 ms late", _loaded),
    "both": ("bucket and in-flight cap at once", _both),
    "large_ra": ("fixed large Retry-After 5-60 s on 5-30% of 429s", _large_ra),
    "moving": ("cap that falls and recovers, drifts or oscillates", _moving),
    "step": ("cap halves, then doubles back", _step),
    "latency": ("latency 0.1-5 s growing with load", _latency_family),
    "slow": ("cap of 0.2-2/s: a window per minute or a bucket, latency 0.5-5 s", _slow),
    "free": ("OpenRouter's free models: 20 a minute per key, 1-4 models, its 429s", _free),
    "noise": ("0-8% 5xx/200-errors/drops, 0-2% 402s", _noise),
    "gateway": ("a loaded gateway: latency grows with load, refusals as slow as answers", _gateway),
    "shared": ("2-8 models behind one key-wide cap", lambda rng, s: _several(rng, s, True)),
    "own": ("2-8 models, each behind its own cap", lambda rng, s: _several(rng, s, False)),
    "processes": ("two processes on one key-wide cap", lambda rng, s: _several(rng, s, True, processes=True)),
    "own_processes": ("two processes, each behind its own cap", lambda rng, s: _several(rng, s, False, processes=True)),
}


def draw(family: str, seed: int) -> Draw:
    rng = random.Random(f"{family}:{seed}")
    params, make = FAMILIES[family][1](rng, seed)
    return Draw(family, seed, params, make)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", nargs="?", choices=list(FAMILIES), help="print its first draws (default: every family's)")
    ap.add_argument("--draws", type=int, default=3)
    args = ap.parse_args()
    for fam in [args.family] if args.family else FAMILIES:
        for seed in range(args.draws):
            print(f"{fam} {seed}: {draw(fam, seed).describe()}")
