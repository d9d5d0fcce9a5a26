"""Make data/sample.parquet: a small, freely licensed set of hot dogs and look-alikes to try the harness with.

The "photos" are emoji artwork from four freely licensed sets, drawn at several sizes on different
backgrounds (white, pastel tints, gradients, a plate on a table, a picnic cloth) with a slight rotation,
and saved as JPEG (quality 85):

  Noto Color Emoji   Debian package fonts-noto-color-emoji       font OFL-1.1 (artwork Apache-2.0), (c) Google
  Twemoji 15         npm @twemoji/svg@15.0.0                     CC-BY-4.0, (c) Twitter, Inc. and contributors
  OpenMoji 17        npm openmoji@17.0.0                         CC-BY-SA-4.0, OpenMoji (openmoji.org)
  Fluent Emoji Flat  npm @iconify-json/fluent-emoji-flat@1.2.6   MIT, (c) Microsoft Corporation

The script lays them out as FOLDER/<category>/*.jpg, FOLDER/extras/ (two unscored jokes, labelled in
extras/labels.csv) and FOLDER/sources.csv (source with attribution, licence), then calls
hotdogbench_core.store.build_dataset.build_dataset(FOLDER, data/sample.parquet, per_group=None).

To rebuild (from the repository root; needs apt, npm, and the PyPI package cairosvg, which is only
needed here and so is not a project dependency):

    apt-get update && apt-get install -y fonts-noto-color-emoji fonts-dejavu-core libcairo2
    uv run --with cairosvg==2.9.1 python scripts/make_sample.py

It runs `npm pack` for the three npm packages into a temporary folder (or pass --packages DIR holding
their unpacked tarballs as DIR/<tarball name without .tgz>/package/). --keep DIR keeps the image tree.
Output is deterministic for given package and library versions (seeded layout, no timestamps).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import random
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from hotdogbench_core.store.build_dataset import build_dataset  # noqa: E402

NOTO_FONT = Path("/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf")
CAPTION_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif-Italic.ttf")
NPM = {"twemoji": "@twemoji/svg@15.0.0", "openmoji": "openmoji@17.0.0",
       "fluent": "@iconify-json/fluent-emoji-flat@1.2.6"}
# category -> (code point, Fluent Emoji name, Unicode name)
CATEGORIES = {
    "hot_dog": (0x1F32D, "hot-dog", "HOT DOG"),
    "sandwich": (0x1F96A, "sandwich", "SANDWICH"),
    "taco": (0x1F32E, "taco", "TACO"),
    "burrito": (0x1F32F, "burrito", "BURRITO"),
    "hamburger": (0x1F354, "hamburger", "HAMBURGER"),
    "baguette_bread": (0x1F956, "baguette-bread", "BAGUETTE BREAD"),
    "bacon": (0x1F953, "bacon", "BACON"),
    "tamale": (0x1FAD4, "tamale", "TAMALE"),
}
SETS = ("noto", "twemoji", "openmoji", "fluent")  # two photos per set per category
LICENSES = {"noto": "OFL-1.1", "twemoji": "CC-BY-4.0", "openmoji": "CC-BY-SA-4.0", "fluent": "MIT"}
CHANGES = "drawn at {size}px on a {bg} background, rotated {angle:+d} degrees, saved as JPEG"
BG_WORDS = {"white": "white", "tint": "pastel", "gradient": "pastel gradient", "plate": "plate-on-table",
            "picnic": "checked picnic-cloth"}
SIZES = (96, 128, 160, 192, 224, 256, 288, 320)
BACKGROUNDS = ("white", "tint", "gradient", "plate", "picnic", "tint", "plate", "gradient")
PASTELS = [(255, 244, 230), (232, 244, 255), (240, 255, 240), (255, 240, 246), (248, 246, 232), (236, 236, 246)]
TABLES = [(196, 160, 120), (170, 190, 200), (210, 200, 180), (150, 170, 140)]


def npm_unpack(dest: Path) -> Path:
    """`npm pack` the artwork packages into dest and unpack each to dest/<tarball stem>/package/."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(dest), *NPM.values()],
                   check=True, stdout=subprocess.DEVNULL)
    for tgz in dest.glob("*.tgz"):
        with tarfile.open(tgz) as t:
            t.extractall(dest / tgz.name.removesuffix(".tgz"), filter="data")
    return dest


def package_dir(packages: Path, spec: str) -> Path:
    name, version = spec.rsplit("@", 1)
    return packages / f"{name.lstrip('@').replace('/', '-')}-{version}" / "package"


class Artwork:
    """Emoji artwork as RGBA images at a requested size, from one of the four sets."""

    def __init__(self, packages: Path):
        try:
            import cairosvg  # build-time only
        except ImportError:
            sys.exit("cairosvg is missing: run as `uv run --with cairosvg==2.9.1 python scripts/make_sample.py`")
        self._svg2png = cairosvg.svg2png
        self.noto = ImageFont.truetype(str(NOTO_FONT), 109)  # CBDT bitmaps come in one strike: 109 pt
        self.twemoji = package_dir(packages, NPM["twemoji"])
        self.openmoji = package_dir(packages, NPM["openmoji"])
        self.fluent = json.loads((package_dir(packages, NPM["fluent"]) / "icons.json").read_text())

    def _svg(self, svg: bytes, size: int) -> Image.Image:
        png = self._svg2png(bytestring=svg, output_width=size, output_height=size)
        return Image.open(io.BytesIO(png)).convert("RGBA")

    def draw(self, art: str, cp: int, fluent_name: str, size: int, variant: str = "color") -> Image.Image:
        if art == "noto":
            im = Image.new("RGBA", (160, 160), (0, 0, 0, 0))
            ImageDraw.Draw(im).text((0, 0), chr(cp), font=self.noto, embedded_color=True)
            box = im.getbbox()
            if box is None or box[2] - box[0] < 64:  # nothing drawn, or a narrow tofu box
                raise RuntimeError(f"Noto Color Emoji has no glyph for U+{cp:X}")
            im = im.crop(box)
            return im.resize((size, round(size * im.height / im.width)), Image.LANCZOS)
        if art == "twemoji":
            return self._svg((self.twemoji / f"{cp:x}.svg").read_bytes(), size)
        if art == "openmoji":
            return self._svg((self.openmoji / variant / "svg" / f"{cp:X}.svg").read_bytes(), size)
        icon = self.fluent["icons"][fluent_name]
        w, h = icon.get("width", self.fluent.get("width", 32)), icon.get("height", self.fluent.get("height", 32))
        svg = f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}">{icon["body"]}</svg>'
        return self._svg(svg.encode(), size)


def background(kind: str, size: int, rng: random.Random) -> Image.Image:
    if kind == "white":
        return Image.new("RGB", (size, size), (255, 255, 255))
    if kind == "tint":
        return Image.new("RGB", (size, size), rng.choice(PASTELS))
    if kind == "gradient":
        a, b = rng.sample(PASTELS, 2)
        im = Image.new("RGB", (size, size))
        d = ImageDraw.Draw(im)
        for y in range(size):
            t = y / (size - 1)
            d.line([(0, y), (size, y)], fill=tuple(round(a[i] * (1 - t) + b[i] * t) for i in range(3)))
        return im
    if kind == "picnic":  # red-and-white checked cloth, softened
        im = Image.new("RGB", (size, size), (250, 250, 250))
        d, step = ImageDraw.Draw(im), max(12, size // 8)
        for i in range(0, size, step * 2):
            d.rectangle([i, 0, i + step - 1, size], fill=(240, 190, 190))
            d.rectangle([0, i, size, i + step - 1], fill=(240, 190, 190))
        return im.filter(ImageFilter.GaussianBlur(1))
    # a plate on a table
    im = Image.new("RGB", (size, size), rng.choice(TABLES))
    d = ImageDraw.Draw(im)
    for y in range(0, size, max(6, size // 16)):  # wood grain
        grain = tuple(c - 12 for c in im.getpixel((0, 0)))
        d.line([(0, y), (size, y + rng.randint(-3, 3))], fill=grain, width=1)
    m = size // 14
    d.ellipse([m, m + size // 12, size - m, size - m], fill=(200, 200, 200))  # the plate's edge below
    d.ellipse([m, m, size - m, size - m - size // 14], fill=(248, 248, 245), outline=(215, 215, 210),
              width=max(2, size // 40))
    d.ellipse([3 * m, 3 * m, size - 3 * m, size - 3 * m - size // 14], outline=(232, 232, 228),
              width=max(1, size // 80))
    return im


def compose(art: Image.Image, bg: Image.Image, angle: int, rng: random.Random, shadow: bool) -> Image.Image:
    art = art.rotate(angle, resample=Image.BICUBIC, expand=True)
    x = (bg.width - art.width) // 2 + rng.randint(-bg.width // 20, bg.width // 20)
    y = (bg.height - art.height) // 2 + rng.randint(-bg.height // 20, bg.height // 20)
    out = bg.convert("RGBA")
    if shadow:
        a = art.getchannel("A").point(lambda v: v * 0.35).filter(ImageFilter.GaussianBlur(max(2, bg.width // 60)))
        out.paste(Image.new("RGBA", art.size, (60, 40, 20, 255)), (x + bg.width // 40, y + bg.width // 30), a)
    out.paste(art, (x, y), art)  # the background is opaque, so a masked paste is "art over background"
    return out.convert("RGB")


def save_jpeg(im: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path, "JPEG", quality=85)


def make_tree(folder: Path, artwork: Artwork) -> list[dict]:
    """Write FOLDER/<category>/*.jpg and FOLDER/extras/*; return the sources.csv rows."""
    sources = []
    for cat, (cp, fluent_name, uname) in CATEGORIES.items():
        for n in range(2 * len(SETS)):
            art_set = SETS[n // 2]
            rng = random.Random(f"{cat}/{n}")  # seeded by name: the same tree every run
            size = SIZES[(n * 3 + len(cat)) % len(SIZES)]
            if art_set == "noto":
                size = min(size, 224)  # the font's bitmaps are 136 px wide; don't blow them up further
            bg_kind = BACKGROUNDS[(n + len(cat)) % len(BACKGROUNDS)]
            angle = rng.randint(-18, 18)
            scale = 0.62 if bg_kind == "plate" else rng.uniform(0.6, 0.8)
            art = artwork.draw(art_set, cp, fluent_name, round(size * scale))
            im = compose(art, background(bg_kind, size, rng), angle, rng, shadow=bg_kind == "plate")
            name = f"{art_set}_{cat}_{n % 2 + 1}.jpg"
            save_jpeg(im, folder / cat / name)
            changes = CHANGES.format(size=size, bg=BG_WORDS[bg_kind], angle=angle)
            sources.append({"file": f"{cat}/{name}", "license": LICENSES[art_set],
                            "source": f"{attribution(art_set, cp, uname, fluent_name)}; {changes}"})
    return sources + make_extras(folder, artwork)


def attribution(art_set: str, cp: int, uname: str, fluent_name: str) -> str:
    return {
        "noto": f"Noto Color Emoji U+{cp:X} {uname} (c) Google Inc., via Debian fonts-noto-color-emoji "
                f"(font OFL-1.1; Noto Emoji artwork also Apache-2.0)",
        "twemoji": f"Twemoji 15.0 U+{cp:X} {uname} (c) Twitter, Inc. and other contributors, CC BY 4.0, "
                   f"via npm {NPM['twemoji']}",
        "openmoji": f"OpenMoji 17.0 U+{cp:X} {uname}, OpenMoji - the open-source emoji and icon project "
                    f"(openmoji.org), CC BY-SA 4.0, via npm {NPM['openmoji']}",
        "fluent": f"Fluent Emoji Flat '{fluent_name}' (c) Microsoft Corporation, MIT, via npm {NPM['fluent']}",
    }[art_set]


def make_extras(folder: Path, artwork: Artwork) -> list[dict]:
    """Two unscored jokes: a Magritte-style line-drawn hot dog (it is one) and a dog in the sun (it isn't)."""
    extras = folder / "extras"
    # 1. "Ceci n'est pas un hot dog." - OpenMoji's black line art on cream, caption below
    im = Image.new("RGB", (320, 280), (243, 234, 210))
    art = artwork.draw("openmoji", 0x1F32D, "hot-dog", 200, variant="black").rotate(-8, Image.BICUBIC, expand=True)
    im.paste(art, ((320 - art.width) // 2, 0), art)
    font = ImageFont.truetype(str(CAPTION_FONT), 22) if CAPTION_FONT.exists() else ImageFont.load_default(22)
    d = ImageDraw.Draw(im)
    text = "Ceci n'est pas un hot dog."
    d.text(((320 - d.textlength(text, font=font)) / 2, 236), text, font=font, fill=(40, 30, 20))
    save_jpeg(im, extras / "magritte_hot_dog.jpg")
    # 2. a hot dog of the other kind: Twemoji dog under a blazing sun
    bg = background("gradient", 256, random.Random("sun"))
    sun = artwork.draw("twemoji", 0x2600, "", 96)
    dog = artwork.draw("twemoji", 0x1F415, "", 150)
    im = bg.convert("RGBA")
    im.alpha_composite(sun, (150, 8))
    im.alpha_composite(dog, (30, 96))
    save_jpeg(im.convert("RGB"), extras / "pun_dog_in_the_sun.jpg")
    (extras / "labels.csv").write_text("file,category,is_hot_dog\nmagritte_hot_dog.jpg,magritte,true\n"
                                       "pun_dog_in_the_sun.jpg,pun,false\n")
    return [
        {"file": "extras/magritte_hot_dog.jpg", "license": "CC-BY-SA-4.0",
         "source": attribution("openmoji", 0x1F32D, "HOT DOG (black line art)", "")
                   + "; after Rene Magritte's 'The Treachery of Images', caption set in DejaVu Serif Italic, "
                   "on a cream background, saved as JPEG"},
        {"file": "extras/pun_dog_in_the_sun.jpg", "license": "CC-BY-4.0",
         "source": "Twemoji 15.0 U+1F415 DOG and U+2600 SUN (c) Twitter, Inc. and other contributors, CC BY 4.0, "
                   f"via npm {NPM['twemoji']}; composed on a gradient background, saved as JPEG"},
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packages", type=Path, help="folder of unpacked npm tarballs (default: npm pack into a temp dir)")
    ap.add_argument("--output", type=Path, default=ROOT / "data" / "sample.parquet")
    ap.add_argument("--keep", type=Path, help="write the image tree here (default: a temp dir, removed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        packages = args.packages or npm_unpack(Path(tmp) / "npm")
        folder = args.keep or Path(tmp) / "photos"
        sources = make_tree(folder, Artwork(packages))
        with open(folder / "sources.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["file", "source", "license"])
            w.writeheader()
            w.writerows(sources)
        report = build_dataset(folder, args.output, per_group=None)
    size = args.output.stat().st_size
    print(f"{report.path}: {report.scored} scored photos in {len(report.per_category)} categories "
          f"({', '.join(f'{c} {n}' for c, n in report.per_category.items())}) + {report.extras} extras; "
          f"{size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
