"""The image transform of a condition: deterministic Pillow re-encoding, never enlarging."""
import hashlib
import io

import pytest
from PIL import Image

from hotdogbench_core.protocol.transform import (DEFAULT_QUALITY, describe_transform, image_size, sent_image,
                                                 transform_image)
from hotdogbench_core.sim.variants import jpeg_quality
from hotdogbench_core.store.dataset import SAMPLE, load_dataset


def _jpeg(w, h, q=85, **save) -> bytes:
    im = Image.new("RGB", (w, h))
    for x in range(0, w, 7):
        for y in range(0, h, 5):
            im.putpixel((x, y), ((x * 3) % 256, (y * 5) % 256, (x + y) % 256))
    out = io.BytesIO()
    im.save(out, "JPEG", quality=q, **save)
    return out.getvalue()


def _opened(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def test_same_photo_same_spec_same_bytes():
    photo = _jpeg(640, 480)
    a, b = transform_image(photo, 256, 70), transform_image(photo, 256, 70)
    assert a == b and a != photo
    im = _opened(a)
    assert im.format == "JPEG" and im.size == (256, 192) and jpeg_quality(im) == 70
    assert not im.info.get("exif") and not im.info.get("icc_profile")


def test_never_enlarged_and_untouched_without_q():
    photo = _jpeg(200, 100)
    assert transform_image(photo, 512) is photo  # no resize needed, no q: the photo's own bytes
    assert transform_image(photo, None, None) is photo
    re = transform_image(photo, 512, 40)  # q alone re-encodes at full size
    assert _opened(re).size == (200, 100) and jpeg_quality(_opened(re)) == 40
    small = transform_image(photo, 50)
    assert _opened(small).size == (50, 25) and jpeg_quality(_opened(small)) == DEFAULT_QUALITY


def test_transparency_is_flattened_on_white_and_orientation_applied():
    rgba = Image.new("RGBA", (64, 32), (255, 0, 0, 0))  # fully transparent red
    buf = io.BytesIO()
    rgba.save(buf, "PNG")
    out = _opened(transform_image(buf.getvalue(), 32))
    assert out.mode == "RGB" and out.size == (32, 16) and min(out.getpixel((10, 8))) > 245  # white, not red
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90 degrees: a viewer shows it 480 wide, 640 high
    rotated = _jpeg(640, 480, exif=exif.tobytes())
    assert image_size(rotated) == (480, 640)
    assert _opened(transform_image(rotated, 320)).size == (240, 320)


def test_an_undecodable_photo_is_a_value_error():
    with pytest.raises(ValueError, match="cannot decode the photo"):
        transform_image(b"\xff\xd8\xff\xe0not really a jpeg", 256)


def test_sent_image_records_digest_and_size_of_what_is_sent():
    photo = next(load_dataset(SAMPLE).stream()).image
    s = sent_image(photo, 64, 50)
    assert s.sha256 == hashlib.sha256(s.image).hexdigest() and (s.width, s.height) == _opened(s.image).size
    assert max(s.width, s.height) == 64
    same = sent_image(photo)
    assert same.image is photo and same.sha256 == hashlib.sha256(photo).hexdigest()


def test_the_manifest_names_the_transform():
    assert describe_transform(None, None) is None
    d = describe_transform(512, None)
    assert d["longest_side_px"] == 512 and d["jpeg_quality"] == DEFAULT_QUALITY and d["pillow"]
