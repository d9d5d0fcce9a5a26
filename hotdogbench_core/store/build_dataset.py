"""Build the photo table (parquet) from a folder of photos sorted into one sub-folder per category.

    FOLDER/hot_dog/*.jpg          the positive class (required)
    FOLDER/<category>/*.jpg       look-alikes: every other folder is a negative category
    FOLDER/extras/*               optional unscored rows (ids 1001, 1002, ... in sorted filename order)
    FOLDER/extras/labels.csv      optional: file,category,is_hot_dog for the extras
    FOLDER/sources.csv            optional: file,source,license with file relative to FOLDER (hot_dog/a.jpg)

Images are .jpg .jpeg .png .webp files whose first bytes are JPEG, PNG or WebP; other files (notes, .DS_Store,
the csv files) and hidden files are ignored. The rules follow the reference script's `--input local`:

- balance: per category, the first `per_group` photos in md5(stem + "sample") order (None keeps them all);
  a category with fewer keeps all it has and is listed in `BuildReport.short_categories`;
- ids: 1..N over the kept photos in md5(stem) order, so the same folder always gives the same ids;
- an extra's category and label come from its row in extras/labels.csv; a file with no row there gets
  category = its stem and is_hot_dog = True when the stem contains "hot_dog" but not "not_hot_dog";
- open_images_id is the file stem (the reference's photos were named by their Open Images id);
- photos with no row in sources.csv get null source and license.

The same folder gives the same file, byte for byte (no timestamps; fixed row order). The file is written
to a temporary name beside the output and renamed into place, so readers never see half a file.
"""
from __future__ import annotations

import csv
import hashlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .dataset import sniff_image

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
POSITIVE = "hot_dog"
EXTRAS = "extras"
FIRST_EXTRA_ID = 1001
SCHEMA = pa.schema([
    ("id", pa.int64()), ("image", pa.binary()), ("is_hot_dog", pa.bool_()), ("category", pa.string()),
    ("scored", pa.bool_()), ("open_images_id", pa.string()), ("source", pa.string()), ("license", pa.string()),
])


@dataclass(frozen=True)
class BuildReport:
    path: Path
    per_category: dict[str, int]                              # scored rows per category, by name
    short_categories: list[str] = field(default_factory=list)  # had fewer than per_group photos
    extras: int = 0                                           # unscored rows (ids from 1001)

    @property
    def scored(self) -> int:
        return sum(self.per_category.values())


def _md5(s: str) -> str:
    return hashlib.md5(s.encode()).hexdigest()


def image_files(folder: Path) -> list[Path]:
    """The image files directly in `folder`, sorted by name; raises on one whose bytes aren't an image."""
    files = sorted(p for p in folder.iterdir()
                   if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_SUFFIXES)
    for p in files:
        with open(p, "rb") as f:
            if sniff_image(f.read(12)) is None:
                raise ValueError(f"{p}: has an image extension but its bytes are not JPEG, PNG or WebP")
    return files


def balance(files: list[Path], per_group: int | None) -> list[Path]:
    """The first `per_group` files in md5(stem + "sample") order (all of them when per_group is None)."""
    ranked = sorted(files, key=lambda p: (_md5(p.stem + "sample"), p.name))
    return ranked if per_group is None else ranked[:per_group]


def parse_bool(value: str, where: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes", "t", "y"):
        return True
    if v in ("false", "0", "no", "f", "n"):
        return False
    raise ValueError(f"{where}: is_hot_dog must be true or false, got {value!r}")


def read_csv(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a csv that must have `columns` (blank cells become None); [] when the file doesn't exist."""
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)} (expected {', '.join(columns)})")
        return [{c: (row.get(c) or "").strip() or None for c in columns} for row in reader]


def extra_label(stem: str) -> tuple[str, bool]:
    """(category, is_hot_dog) of an extra with no labels.csv row, from its file stem."""
    s = stem.lower()
    return stem, "hot_dog" in s and "not_hot_dog" not in s


def category_folders(folder: Path) -> list[Path]:
    """The category folders (every visible sub-folder but extras/), checked: there are some, hot_dog among them."""
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such folder")
    cats = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != EXTRAS)
    if not cats:
        raise ValueError(f"{folder}: no category folders (expected {folder}/hot_dog/ and one folder per look-alike)")
    if not any(c.name == POSITIVE for c in cats):
        raise ValueError(f"{folder}: no {POSITIVE}/ folder: the positive class is required "
                         f"(found: {', '.join(c.name for c in cats)})")
    return cats


def choose(cats: list[Path], per_group: int | None) -> tuple[list[tuple[Path, str]], dict[str, int], list[str]]:
    """(photo, category) pairs kept, in id order; rows per category; categories short of per_group."""
    if per_group is not None and per_group < 1:
        raise ValueError(f"per_group must be at least 1 or None, got {per_group}")
    kept, counts, short = [], {}, []
    for cat in cats:
        files = image_files(cat)
        if not files:
            raise ValueError(f"{cat}: category folder has no images (.jpg .jpeg .png .webp)")
        chosen = balance(files, per_group)
        counts[cat.name] = len(chosen)
        if per_group is not None and len(files) < per_group:
            short.append(cat.name)
        kept += [(p, cat.name) for p in chosen]
    seen: dict[str, Path] = {}
    for p, _ in kept:
        if p.stem in seen:
            raise ValueError(f"{p} and {seen[p.stem]}: two photos named {p.stem!r} (stems are photo ids)")
        seen[p.stem] = p
    return sorted(kept, key=lambda pc: _md5(pc[0].stem)), counts, short


def extras_with_labels(extras_dir: Path) -> list[tuple[Path, str, bool]]:
    """(photo, category, is_hot_dog) for each extra, in sorted filename order."""
    if not extras_dir.is_dir():
        return []
    labels_csv = extras_dir / "labels.csv"
    labels = {}
    for r in read_csv(labels_csv, ("file", "category", "is_hot_dog")):
        name = (r["file"] or "").replace("\\", "/").removeprefix(f"{EXTRAS}/")
        if not r["category"] or not r["is_hot_dog"]:
            raise ValueError(f"{labels_csv}: row for {name!r} needs both category and is_hot_dog")
        labels[name] = (r["category"], parse_bool(r["is_hot_dog"], f"{labels_csv} ({name})"))
    return [(p, *(labels.get(p.name) or extra_label(p.stem))) for p in image_files(extras_dir)]


def collect(folder: Path, per_group: int | None) -> tuple[list[dict], dict[str, int], list[str], int]:
    """All rows of the table, in id order, and the report's per-category counts, short categories, extras."""
    kept, counts, short = choose(category_folders(folder), per_group)
    extras = extras_with_labels(folder / EXTRAS)
    if extras and len(kept) >= FIRST_EXTRA_ID:
        raise ValueError(f"{folder}: {len(kept)} scored photos would reach the extras' ids (from {FIRST_EXTRA_ID})")
    sources = {r["file"].replace("\\", "/"): r
               for r in read_csv(folder / "sources.csv", ("file", "source", "license")) if r["file"]}

    def row(path: Path, **kw) -> dict:
        src = sources.get(path.relative_to(folder).as_posix(), {})
        return {"image": path.read_bytes(), "open_images_id": path.stem,
                "source": src.get("source"), "license": src.get("license"), **kw}

    rows = [row(p, id=i, is_hot_dog=c == POSITIVE, category=c, scored=True) for i, (p, c) in enumerate(kept, 1)]
    rows += [row(p, id=i, is_hot_dog=hot, category=c, scored=False)
             for i, (p, c, hot) in enumerate(extras, FIRST_EXTRA_ID)]
    return rows, counts, short, len(extras)


def write_parquet(rows: list[dict], output: Path) -> None:
    """Write rows atomically (temp file beside the output, then os.replace); deterministic bytes."""
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")  # umask permissions
    try:
        pq.write_table(table, tmp, compression="zstd", row_group_size=256)
        os.replace(tmp, output)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build_dataset(folder: str | Path, output: str | Path, per_group: int | None = 25) -> BuildReport:
    """Build OUTPUT (.parquet) from FOLDER/<category>/<photos>; see the module docstring for the rules."""
    folder, output = Path(folder), Path(output)
    if output.suffix.lower() != ".parquet":
        raise ValueError(f"{output}: the output must be a .parquet file")
    rows, counts, short, n_extras = collect(folder, per_group)
    write_parquet(rows, output)
    return BuildReport(path=output, per_category=counts, short_categories=short, extras=n_extras)
