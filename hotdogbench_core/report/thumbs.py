"""Small images for galleries and previews, as data: URIs (the offline report must load nothing from outside)."""
from __future__ import annotations

import base64
import io
from pathlib import Path

from ..store.dataset import Dataset, sniff_image

THUMB_PX = 128


def image_data_uri(data: bytes, max_px: int = THUMB_PX) -> str:
    """A data: URI for an image, shrunk to at most max_px a side when Pillow is there (else as it is)."""
    kind = sniff_image(data) or "jpeg"
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            if max(im.size) > max_px:
                im.thumbnail((max_px, max_px))
                buf = io.BytesIO()
                if im.mode in ("RGBA", "LA", "P"):
                    im.save(buf, "PNG", optimize=True)
                    kind = "png"
                else:
                    im.convert("RGB").save(buf, "JPEG", quality=80)
                    kind = "jpeg"
                data = buf.getvalue()
    except Exception:  # no Pillow, or bytes Pillow can't read: the original bytes still display
        pass
    return f"data:image/{kind};base64," + base64.b64encode(data).decode()


def thumbnails(dataset: Dataset | str | Path | None, ids: list[int], max_px: int = THUMB_PX) -> dict[int, str]:
    """{id: data URI} for the ids found in the photo table; {} without one."""
    if dataset is None or not ids:
        return {}
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    return {i: image_data_uri(img, max_px) for i, img in ds.images(list(ids)).items()}


def preview_ids(dataset: Dataset, n: int = 16) -> list[int]:
    """Up to n photo ids spread over the categories (round robin), for a preview strip."""
    by_cat: dict[str, list[int]] = {}
    for p in dataset.photos:
        by_cat.setdefault(p.category, []).append(p.id)
    out: list[int] = []
    queues = [list(v) for _, v in sorted(by_cat.items())]
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out
