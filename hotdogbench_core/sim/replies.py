"""What the simulator answers: seeded verdicts per (seed, model, photo), tokens, cost, in the kind's shape.

Answers are decided by a hash of (seed, model, image digest), so they don't depend on request order or
concurrency; the request kind (protocol.endpoint.Endpoint) gives the reply its wire shape.
"""
from __future__ import annotations

import hashlib
import itertools
import math
import random
import struct
import time

from ..protocol.endpoint import Asked, Endpoint, Reply
from .config import SimConfig, accuracy_for, calibration_for, unanswered_for
from .variants import Variant

Labels = dict[str, tuple[bool, str | None]]  # sha256 hex of image bytes -> (is_hot_dog, category)

_INV64 = 1.0 / 2.0 ** 64
_REASONING_BASE = {"none": 0, "minimal": 48, "low": 192, "medium": 640, "high": 2048, "xhigh": 4096}
_CACHE_MAX = 200_000  # cached draws before the cache is cleared (memory stays bounded on long runs)


_EDGE = 1e-6  # a stated confidence stays inside (0.5, 1): a "no" is never noul 0.5, a log-probability never -inf


def calibrated_confidence(accuracy: float, right: bool | None, u: float) -> float:
    """A confidence c in the verdict with P(right | c) = c and E[c] = accuracy, drawn (by inversion of u) given
    whether the verdict is right: c has the prior g = uniform on [a - w, a + w] (a = accuracy clipped to
    [0.5, 1], w = min(a - 0.5, 1 - a)); given right its density is c g(c) / a, given wrong (1 - c) g(c) / (1 - a),
    so by Bayes P(right | c) = c. right None (truth unknown) or w = 0: c = a."""
    a = min(1.0, max(0.5, accuracy))
    w = min(a - 0.5, 1.0 - a)
    lo, hi = a - w, a + w
    if right is None or w <= 0.0:
        return a
    if right:  # density proportional to c on [lo, hi]
        return math.sqrt(lo * lo + u * (hi * hi - lo * lo))
    dlo, dhi = 1.0 - hi, 1.0 - lo  # 1 - c has density proportional to itself on [1 - hi, 1 - lo]
    return 1.0 - math.sqrt(dlo * dlo + u * (dhi * dhi - dlo * dlo))


def stated_confidence(c: float, temperature: float) -> float:
    """The confidence stated for a true confidence c: its chance of being wrong raised to 1 / temperature,
    1 - (1 - c) ** (1 / temperature), kept inside (0.5, 1). temperature 1: c itself (calibrated); below 1
    overconfident (0.3: a coin flip, c = 0.5, is stated as 0.90); above 1 underconfident."""
    c = min(1.0 - _EDGE, max(0.5 + _EDGE, c))
    return min(1.0 - _EDGE, max(0.5 + _EDGE, 1.0 - (1.0 - c) ** (1.0 / temperature)))


class Replies:
    def __init__(self, labels: Labels | None):
        self.labels = labels
        self._draw_cache: dict[tuple, tuple[float, ...]] = {}
        self._ids = itertools.count(1)

    @property
    def labels(self) -> Labels:
        return self._labels

    @labels.setter
    def labels(self, labels: Labels | None) -> None:
        self._labels: Labels = dict(labels or {})
        self._counts: dict[tuple[bool, str | None], int] | None = None  # (truth, category) -> photos

    def precisions(self, cfg: SimConfig, prof: dict, model: str) -> tuple[float, float]:
        """How often a "yes" and a "no" of this model are right, expected over the labelled photos: a "yes" is
        right on a hot dog (its category's accuracy) and wrong on the rest (1 - theirs); a "no" the other way.
        0.5 where the model would never say it."""
        if self._counts is None:
            counts: dict[tuple[bool, str | None], int] = {}
            for truth, category in self._labels.values():
                counts[(bool(truth), category)] = counts.get((bool(truth), category), 0) + 1
            self._counts = counts
        yes_right = yes_wrong = no_right = no_wrong = 0.0
        for (truth, category), n in self._counts.items():
            acc = accuracy_for(cfg, prof, model, category)
            if truth:
                yes_right, no_wrong = yes_right + n * acc, no_wrong + n * (1 - acc)
            else:
                no_right, yes_wrong = no_right + n * acc, yes_wrong + n * (1 - acc)
        return (yes_right / (yes_right + yes_wrong) if yes_right + yes_wrong else 0.5,
                no_right / (no_right + no_wrong) if no_right + no_wrong else 0.5)

    def next_id(self) -> str:
        return f"{int(time.time())}-{next(self._ids):010d}"

    def draws(self, seed: int, model: str, digest: str) -> tuple[float, ...]:
        """Seven uniforms in [0, 1) fixed by (seed, model, image digest): correct?, spread, unanswered?,
        unanswered kind, fenced?, reasoning amount, spare. Independent of request order and concurrency."""
        key = (seed, model, digest)
        d = self._draw_cache.get(key)
        if d is None:
            h = hashlib.blake2b(f"{seed}\x1f{model}\x1f{digest}".encode(), digest_size=56).digest()
            d = tuple(x * _INV64 for x in struct.unpack("<7Q", h))
            if len(self._draw_cache) >= _CACHE_MAX:
                self._draw_cache.clear()
            self._draw_cache[key] = d
        return d

    def _verdict(self, cfg: SimConfig, rng: random.Random, prof: dict, model: str, digest: str,
                 u: tuple, change: float = 0.0) -> tuple[bool, float]:
        """(says hot dog?, its confidence in that) for one request; `change`: a variant's accuracy change."""
        uc, us = u[0], u[1]
        if cfg.consistency < 1.0 and rng.random() >= cfg.consistency:
            uc, us = rng.random(), rng.random()  # re-drawn for this request only
        label = self.labels.get(digest)
        if label is None:  # truth unknown: a (seeded) coin flip
            yes, acc, right = uc < 0.5, 0.5, None
        else:
            truth, category = label
            acc = accuracy_for(cfg, prof, model, category)
            if change:
                acc = min(1.0, max(0.0, acc + change))
            right = uc < acc
            yes = bool(truth) if right else not truth
        t = calibration_for(cfg, model)
        if t is None:  # the fixed confidence, whatever the answer
            return yes, min(1.0, max(0.0, 0.9 + cfg.noul_spread * (2.0 * us - 1.0)))
        # calibrated for what it says: a "yes" is right as often as the model's "yes"es are (its precision),
        # so P(hot dog | stated p) = p, not only P(right | confidence) = confidence
        if right is not None:
            acc = self.precisions(cfg, prof, model)[0 if yes else 1]
        return yes, stated_confidence(calibrated_confidence(acc, right, us), t)

    def reply(self, cfg: SimConfig, rng: random.Random, endpoint: Endpoint, asked: Asked, prof: dict, model: str,
              digest: str, n_bytes: int, empty: bool, variant: Variant | None = None) -> tuple[dict, float, bool]:
        """(response body, cost, carries a verdict?) for one admitted request. `variant`: what a condition's
        request changed (sim/variants.py); its answers are drawn for the photo it shows."""
        change = 0.0
        if variant is not None:
            digest = variant.original
        u = self.draws(cfg.seed, model, digest)
        if variant is not None and variant.changed:
            change = accuracy_change(cfg, variant)
            if cfg.variant_redraw:
                v = self.draws(cfg.seed, f"{model}\x1f{variant.key}", digest)
                if v[6] < cfg.variant_redraw:  # this photo, under this variant: an answer of its own
                    u = (v[0], v[1], *u[2:])
        yes, p = self._verdict(cfg, rng, prof, model, digest, u, change)
        reasoning = 0
        if prof["reasoning"] and asked.reasoning is not None:
            r = asked.reasoning
            base = r.get("max_tokens") if isinstance(r.get("max_tokens"), int) else \
                _REASONING_BASE.get(r.get("effort", "medium"), 640)
            reasoning = 0 if r.get("enabled") is False else int(base * (0.5 + u[5]))
        unanswered = None
        if not empty and u[2] < unanswered_for(cfg, prof, model):
            if prof["reasoning"] and asked.max_tokens and u[3] < 0.5:
                reasoning = asked.max_tokens  # reasoning ran out of tokens before any answer
            unanswered = "I cannot tell."
        image_tokens = n_bytes // 750
        if cfg.image_tokens == "pixels" and variant is not None and variant.width and variant.height:
            image_tokens = math.ceil(variant.width * variant.height / cfg.pixels_per_token)
        provider = f"simulator:{variant.provider}" if variant is not None and variant.provider else "simulator"
        factor = cfg.providers.get(variant.provider, {}).get("price", 1.0) if provider != "simulator" else 1.0
        if factor is None:
            factor = 1.0
        spec = Reply(id=self.next_id(), model=model, provider=provider, verdict=yes, p=p,
                     prompt_tokens=85 + image_tokens + asked.text_chars // 4 + 8, reasoning_tokens=reasoning,
                     unanswered=unanswered, fenced=u[4] < cfg.fenced_rate, empty=empty,
                     logprobs=bool(prof.get("logprobs", True)))

        def price(prompt: int, completion: int) -> float:
            return factor * (prompt * prof["prompt"] + completion * prof["completion"] + prof["image"]
                             + prof["request"])
        resp, cost, answered = endpoint.reply(asked, spec, price)
        if not cfg.report_cost and isinstance(resp.get("usage"), dict):
            resp["usage"].pop("cost", None)  # billed all the same (stats.spent_usd), only not said
        return resp, cost, answered


def accuracy_change(cfg: SimConfig, variant: Variant) -> float:
    """How much a variant moves a model's accuracy: minus size_loss_per_halving per halving of the longest side,
    minus quality_loss_per_10 per 10 JPEG quality points below quality_ref (re-encoded photos only), plus the
    question's prompt_accuracy, plus the provider's accuracy."""
    change = 0.0
    if variant.scale < 1.0:
        change -= cfg.size_loss_per_halving * math.log2(1.0 / variant.scale)
    if variant.quality is not None and variant.quality < cfg.quality_ref:
        change -= cfg.quality_loss_per_10 * (cfg.quality_ref - variant.quality) / 10
    if variant.prompt is not None:
        change += cfg.prompt_accuracy.get(variant.prompt, cfg.prompt_accuracy.get("*", 0.0))
    if variant.provider is not None:
        change += cfg.providers.get(variant.provider, {}).get("accuracy") or 0.0
    return change
