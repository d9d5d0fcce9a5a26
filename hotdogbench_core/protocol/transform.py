"""A condition's image transform: the photo re-encoded, deterministically, with Pillow.

The same bytes, spec and Pillow version give the same bytes out: orientation applied from EXIF (the photo as a
viewer shows it), transparency flattened on white, the longest side scaled down to `px` with Lanczos
resampling (never enlarged; sides rounded half to even, at least 1 px), saved as baseline JPEG at quality `q`
(DEFAULT_QUALITY when only px is given), 4:2:0 chroma subsampling, no optimisation pass, no metadata (no EXIF,
ICC or comments). A photo that needs no resizing under a condition without `q` is sent unchanged.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

from PIL import Image, ImageOps

DEFAULT_QUALITY = 90  # JPEG quality of a resized photo when the condition names none


def _pillow_version() -> str:
    import PIL

    return PIL.__version__


@dataclass(frozen=True)
class Sent:
    """The image bytes a request carries, and what a row records of them."""
    image: bytes
    sha256: str
    width: int | None
    height: int | None


def image_size(image: bytes) -> tuple[int, int] | None:
    """(width, height) as a viewer shows it (EXIF orientation applied), from the header alone; None if unreadable."""
    try:
        with Image.open(io.BytesIO(image)) as im:
            w, h = im.size
            orientation = im.getexif().get(0x0112, 1) if hasattr(im, "getexif") else 1
    except Exception:  # any undecodable payload
        return None
    return (h, w) if orientation in (5, 6, 7, 8) else (w, h)


def flatten(im: Image.Image) -> Image.Image:
    if im.mode in ("RGBA", "LA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return im.convert("RGB")


def transform_image(image: bytes, px: int | None = None, q: int | None = None) -> bytes:
    """The photo under (px, q); the same bytes back when nothing needs doing. Raises ValueError when the photo
    cannot be decoded."""
    if px is None and q is None:
        return image
    try:
        with Image.open(io.BytesIO(image)) as src:
            src.load()
            im = ImageOps.exif_transpose(src)
    except Exception as e:  # Pillow raises many kinds for a damaged payload
        raise ValueError(f"cannot decode the photo to re-encode it ({type(e).__name__}: {str(e)[:120]})") from None
    w, h = im.size
    scale = px / max(w, h) if px is not None else 1.0
    if scale >= 1.0 and q is None:
        return image
    im = flatten(im)
    if scale < 1.0:
        im = im.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    im.save(out, "JPEG", quality=q if q is not None else DEFAULT_QUALITY, optimize=False, progressive=False,
            subsampling=2)
    return out.getvalue()


def sent_image(image: bytes, px: int | None = None, q: int | None = None) -> Sent:
    """The bytes sent under (px, q), their SHA-256 and their size in pixels."""
    data = transform_image(image, px, q)
    size = image_size(data)
    return Sent(data, hashlib.sha256(data).hexdigest(), *(size or (None, None)))


def describe_transform(px: int | None, q: int | None) -> dict | None:
    """What the manifest records of a transform (None: the photos are sent as they are)."""
    if px is None and q is None:
        return None
    return {"longest_side_px": px, "jpeg_quality": q if q is not None else DEFAULT_QUALITY,
            "resample": "lanczos", "never_enlarged": True, "exif_orientation": "applied",
            "transparency": "flattened on white", "subsampling": "4:2:0", "metadata": "none",
            "unchanged_when": "no resize is needed and no q is given", "pillow": _pillow_version()}
