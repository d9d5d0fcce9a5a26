"""The simulator by condition, over real HTTP: re-encoded photos found among the labelled ones, accuracy lost
with size and quality and per prompt, tokens by pixels, providers that differ; the reference request is never
a variant, so none of this changes a run without conditions."""
import math

import httpx
import pytest

from hotdogbench_core.protocol.conditions import Condition
from hotdogbench_core.protocol.request import request_for
from hotdogbench_core.protocol.transform import image_size, transform_image
from hotdogbench_core.sim.app import SimConfig, Simulator, image_digest, labels_from_parquet
from hotdogbench_core.sim.replies import accuracy_change
from hotdogbench_core.sim.variants import PhotoIndex, Variant, jpeg_quality, look
from hotdogbench_core.store.dataset import SAMPLE, load_dataset

AUTH = {"Authorization": "Bearer test-key"}
CHAT = "anthropic/claude-haiku-5.5"


@pytest.fixture(scope="module")
def photos():
    return {p.id: p.image for p in load_dataset(SAMPLE).stream()}


def ask(sim, model, image, condition=None, client=None):
    request = request_for(model, condition=condition)
    return (client or httpx).post(sim.base_url + request.path, content=request.encode(image),
                                  headers={**AUTH, "Content-Type": "application/json"})


def test_every_sample_photo_is_found_again_at_32_px_and_quality_20(photos):
    index = PhotoIndex(SAMPLE)
    for pid, image in photos.items():
        small = transform_image(image, 32, 20)
        found = index.match(image_digest(small), small)
        assert found is not None and found[0] == image_digest(image), f"photo {pid} not matched"
        assert max(found[1].width, found[1].height) == 32 and found[1].quality == 20
    assert index.match("x", b"\xff\xd8\xff\xe0 not an image") is None


def test_jpeg_quality_is_read_back_exactly_from_pillows_tables(photos):
    import io

    from PIL import Image
    image = photos[1]
    for q in (5, 30, 50, 75, 90, 100):
        assert jpeg_quality(Image.open(io.BytesIO(transform_image(image, None, q)))) == q
    assert look(b"nope") is None


def test_accuracy_change_worked_values():
    cfg = SimConfig(size_loss_per_halving=0.05, quality_loss_per_10=0.02, quality_ref=90,
                    prompt_accuracy={"Short?": 0.03, "*": -0.1}, providers={"Slow": {"accuracy": -0.04}})
    assert accuracy_change(cfg, Variant("d", scale=0.25)) == pytest.approx(-0.10)  # two halvings
    assert accuracy_change(cfg, Variant("d", quality=40)) == pytest.approx(-0.10)  # 50 points below 90
    assert accuracy_change(cfg, Variant("d", quality=95)) == 0.0
    assert accuracy_change(cfg, Variant("d", prompt="Short?")) == pytest.approx(0.03)
    assert accuracy_change(cfg, Variant("d", prompt="Other")) == pytest.approx(-0.1)
    assert accuracy_change(cfg, Variant("d", scale=0.5, quality=80, provider="Slow")) == pytest.approx(-0.11)


def test_a_reencoded_photo_is_answered_for_the_photo_it_shows(photos):
    """With no loss configured, a 64 px copy is answered as its original: truth and draws are the original's."""
    labels = labels_from_parquet(SAMPLE)
    with Simulator(SimConfig(seed=4, latency_s=0.0, variant_redraw=0.0), labels=labels) as sim, httpx.Client() as c:
        for image in list(photos.values())[:20]:
            full = ask(sim, CHAT, image, client=c).json()["choices"][0]["message"]["content"]
            small = ask(sim, CHAT, transform_image(image, 64), Condition("s", px=64), client=c)
            assert small.json()["choices"][0]["message"]["content"] == full


def test_size_loss_lowers_accuracy_and_pixel_tokens_follow_the_image(photos):
    labels = labels_from_parquet(SAMPLE)
    truth = {image_digest(img): labels[image_digest(img)][0] for img in photos.values()}
    cfg = SimConfig(seed=1, latency_s=0.0, fenced_rate=0.0, accuracy={CHAT: 1.0}, size_loss_per_halving=0.25,
                    variant_redraw=0.0, image_tokens="pixels")
    right = {"full": 0, "tiny": 0}
    with Simulator(cfg, labels=labels) as sim, httpx.Client() as c:
        for image in photos.values():
            for name, px in (("full", None), ("tiny", 16)):
                sent = transform_image(image, px) if px else image
                r = ask(sim, CHAT, sent, Condition("t", px=px) if px else None, client=c).json()
                said = '"hot_dog": true' in r["choices"][0]["message"]["content"]
                right[name] += said == truth[image_digest(image)]
                w, h = image_size(sent)
                text = len(request_for(CHAT).settings()["question"]) // 4
                assert r["usage"]["prompt_tokens"] == 85 + math.ceil(w * h / 750) + text + 8
    assert right["full"] == len(photos)  # accuracy 1.0 at full size
    # 96-320 px photos at 16 px: 2.6 to 4.3 halvings, 0.65 to 1.0 accuracy lost
    assert right["tiny"] < 0.5 * len(photos)


def test_providers_differ_and_an_unknown_one_is_refused(photos):
    image = photos[3]
    cfg = SimConfig(seed=0, latency_s=0.0, providers={"Fast": {"price": 0.5, "quantization": "fp8"},
                                                      "Slow": {"latency_s": 0.3}})
    with Simulator(cfg, labels=labels_from_parquet(SAMPLE)) as sim:
        ref = ask(sim, CHAT, image).json()
        fast = ask(sim, CHAT, image, Condition("f", provider={"only": ["Fast"]})).json()
        assert ref["provider"] == "simulator" and fast["provider"] == "simulator:Fast"
        assert fast["usage"]["cost"] == pytest.approx(ref["usage"]["cost"] * 0.5)
        assert ask(sim, CHAT, image, Condition("o", provider={"order": ["Nope", "Slow"]})).json()["provider"] \
            == "simulator:Slow"
        refused = ask(sim, CHAT, image, Condition("q", provider={"only": ["Slow"], "quantizations": ["fp8"]}))
        assert refused.status_code == 404 and "No allowed providers" in refused.json()["error"]["message"]
        # clef's own provider object (pinned to Cloudflare) is not a variant: no provider configured is asked for
        clef = request_for("cloudflare/clef")
        r = httpx.post(sim.base_url + clef.path, content=clef.encode(image), headers=AUTH)
        assert r.status_code == 404  # this config names only Fast and Slow
    with Simulator(SimConfig(seed=0, latency_s=0.0), labels=labels_from_parquet(SAMPLE)) as sim:
        clef = request_for("cloudflare/clef")
        r = httpx.post(sim.base_url + clef.path, content=clef.encode(image), headers=AUTH)
        assert r.status_code == 200 and r.json()["provider"] == "simulator"  # no providers configured: as before


def test_the_reference_request_is_never_a_variant(photos):
    """Condition knobs on, the reference request's answers are those of a simulator without them."""
    knobs = dict(size_loss_per_halving=0.5, quality_loss_per_10=0.5, prompt_accuracy={"*": -0.5},
                 variant_redraw=1.0)
    labels = labels_from_parquet(SAMPLE)
    answers = []
    for extra in ({}, knobs):
        with Simulator(SimConfig(seed=2, latency_s=0.0, **extra), labels=labels) as sim, httpx.Client() as c:
            got = []
            for image in photos.values():
                r = ask(sim, CHAT, image, client=c).json()
                got.append((r["choices"][0]["message"]["content"], r["usage"]["prompt_tokens"], r["usage"]["cost"]))
            answers.append(got)
    assert answers[0] == answers[1]


@pytest.mark.parametrize("bad,match", [
    ({"size_loss_per_halving": 2}, "size_loss_per_halving must be in"),
    ({"quality_ref": 0}, "quality_ref must be a whole number"),
    ({"image_tokens": "tiles"}, "image_tokens must be one of"),
    ({"pixels_per_token": 0}, "pixels_per_token must be above 0"),
    ({"prompt_accuracy": {"*": 3}}, r"prompt_accuracy\['\*'\] must be a number in \[-1, 1\]"),
    ({"providers": {"A": {"speed": 1}}}, "providers\\['A'\\] takes accuracy"),
    ({"providers": {"A": {"latency_s": -1}}}, "providers\\['A'\\].latency_s must be a finite number >= 0"),
])
def test_condition_knobs_are_checked(bad, match):
    with pytest.raises(ValueError, match=match):
        SimConfig(**bad)
