"""How the simulator tells a condition's request from the reference's: which labelled photo a re-encoded image
shows, its size and JPEG quality, the question text, the provider asked for.

A transformed photo has new bytes, so its digest is in no label. The simulator finds the labelled photo it
shows by a fingerprint (16x16 grayscale after the transform's own flattening, nearest by RMS difference among
photos of about the same aspect ratio, within MATCH_RMS), so its truth, category and answer draws are the
original's: a photo a model gets right at full size is the same photo at 256 px, answered right unless the
condition's accuracy loss (or a re-draw, SimConfig.variant_redraw) says otherwise. An image that matches
nothing is answered as before: a seeded coin flip.
"""
from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass
from pathlib import Path

from ..protocol.chat import QUESTION
from ..protocol.decisions import INSTRUCTIONS

FINGERPRINT_SIDE = 16
MATCH_RMS = 24.0  # of 255: a 32 px, quality 20 copy of a sample photo is within 9 of it; two photos 13 or more apart
ASPECT_TOLERANCE = 0.08
REFERENCE_TEXTS = (QUESTION, INSTRUCTIONS)
_CACHE_MAX = 20_000
# IJG's standard luminance quantization table (natural order), which Pillow scales by quality
_STD_LUMA = (16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
             14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
             49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99)


def _scaled(q: int) -> list[int]:
    s = 5000 // q if q < 50 else 200 - 2 * q
    return [min(255, max(1, (v * s + 50) // 100)) for v in _STD_LUMA]


_TABLES = {q: _scaled(q) for q in range(1, 101)}


def jpeg_quality(im) -> int | None:
    """The IJG quality whose luminance table is nearest the JPEG's (exact for Pillow's own output); None if the
    image is not a JPEG."""
    tables = getattr(im, "quantization", None)
    if not tables or 0 not in tables:
        return None
    luma = list(tables[0])
    if len(luma) != 64:
        return None
    return min(_TABLES, key=lambda q: (sum(abs(a - b) for a, b in zip(_TABLES[q], luma)), -q))


@dataclass(frozen=True)
class Seen:
    """What the simulator sees of one image."""
    width: int
    height: int
    quality: int | None
    fingerprint: bytes


def look(image: bytes) -> Seen | None:
    from PIL import Image, ImageOps

    from ..protocol.transform import flatten

    try:
        with Image.open(io.BytesIO(image)) as src:
            src.load()
            quality = jpeg_quality(src)
            im = ImageOps.exif_transpose(src)
            w, h = im.size
            small = flatten(im).convert("L").resize((FINGERPRINT_SIDE, FINGERPRINT_SIDE), Image.Resampling.BOX)
            return Seen(w, h, quality, small.tobytes())
    except Exception:  # not an image Pillow reads: nothing to match
        return None


def _rms(a: bytes, b: bytes) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)) / len(a))


class PhotoIndex:
    """The labelled photos' fingerprints, read from their table the first time an unknown image arrives."""

    def __init__(self, source: str | Path | None):
        self.source = source
        self._photos: dict[str, Seen] | None = None
        self._matches: dict[str, tuple[str, Seen] | None] = {}  # digest -> (original digest, what was seen)

    def _load(self) -> dict[str, Seen]:
        if self._photos is None:
            self._photos = {}
            if self.source is not None and Path(self.source).is_file():
                import duckdb

                con = duckdb.connect()
                try:
                    rows = con.execute("SELECT image FROM read_parquet(?)", [str(self.source)]).fetchall()
                finally:
                    con.close()
                for (img,) in rows:
                    if img is not None:
                        seen = look(bytes(img))
                        if seen is not None:
                            self._photos[hashlib.sha256(bytes(img)).hexdigest()] = seen
        return self._photos

    def original(self, digest: str) -> Seen | None:
        return self._load().get(digest)

    def match(self, digest: str, image: bytes) -> tuple[str, Seen] | None:
        """(the digest of the labelled photo this image shows, what was seen of it), or None."""
        if digest in self._matches:
            return self._matches[digest]
        seen = look(image)
        found = None
        if seen is not None:
            aspect = seen.width / seen.height
            best = None
            for d, o in self._load().items():
                if abs(o.width / o.height - aspect) > ASPECT_TOLERANCE * aspect:
                    continue
                dist = _rms(seen.fingerprint, o.fingerprint)
                if dist <= MATCH_RMS and (best is None or dist < best[0]):
                    best = (dist, d)
            found = (best[1], seen) if best else None
        if len(self._matches) >= _CACHE_MAX:
            self._matches.clear()
        self._matches[digest] = found
        return found


@dataclass(frozen=True)
class Variant:
    """A request's departures from the reference, as far as the simulator's answers care."""
    original: str  # the digest of the labelled photo it shows (its own when it is a labelled photo)
    width: int | None = None
    height: int | None = None
    scale: float = 1.0  # longest side over the original's
    quality: int | None = None  # the JPEG quality, when re-encoded
    prompt: str | None = None  # the question text, when not the reference's
    provider: str | None = None  # the simulated provider that answers, when SimConfig.providers names them

    @property
    def changed(self) -> bool:
        return self.scale < 1.0 or self.quality is not None or self.prompt is not None or self.provider is not None

    @property
    def key(self) -> str:
        return f"{self.width}x{self.height}|q{self.quality}|{self.prompt}|{self.provider}"


def question_text(body: dict) -> str | None:
    """The request's question: a chat body's text parts, or a decisions body's instructions."""
    texts = []
    msgs = body.get("messages")
    for msg in msgs if isinstance(msgs, list) else []:
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, str):
            texts.append(content)
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
    questions = body.get("questions")
    for q in questions.values() if isinstance(questions, dict) else []:
        if isinstance(q, dict) and isinstance(q.get("instructions"), str):
            texts.append(q["instructions"])
    return "\n".join(texts) if texts else None


def provider_names(body: dict) -> tuple[list[str], list[str] | None]:
    """(the providers a body asks for, in its order: `only` first, else `order`; its quantizations or None)."""
    p = body.get("provider")
    if not isinstance(p, dict):
        return [], None
    names = p.get("only") if isinstance(p.get("only"), list) else p.get("order")
    quants = p.get("quantizations")
    return ([n for n in names if isinstance(n, str)] if isinstance(names, list) else [],
            [q for q in quants if isinstance(q, str)] if isinstance(quants, list) else None)
