"""The photo table: find it (local parquet or a URL cached in data/), check it, and stream its photos.

Images are not held in memory: the table's labels are read once, the image bytes are streamed in batches
(straight from the parquet pages, whatever the row-group size) while a run asks for them, so a dataset far
larger than memory still runs.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import duckdb
import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import FieldError

DATA_URL = "https://md-ecosystem-public.s3.amazonaws.com/hotdogbench.parquet"  # the public dataset
REQUIRED_COLUMNS = ("id", "image", "is_hot_dog", "category")
SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample.parquet"
STREAM_BATCH = 64  # photos read from the file at a time
DOWNLOADS = "downloads"  # data/downloads/: tables downloaded from URLs


class DatasetError(FieldError):
    """The photo table cannot be used; the message names the column, the ids or the file."""

    field = "input"


# on_download(name, bytes so far, total bytes or None, finished): progress of a URL's first download
OnDownload = Callable[..., None]


@dataclass(frozen=True)
class Photo:
    id: int
    category: str
    is_hot_dog: bool
    scored: bool
    open_images_id: str | None
    image: bytes = b""


_SHA_CACHE: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes (what a resume and a manifest compare), cached by path, size and mtime."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _SHA_CACHE[key] = h.hexdigest()
    return _SHA_CACHE[key]


def sniff_image(data: bytes) -> str | None:
    """The image type by its first bytes: 'jpeg', 'png', 'webp', or None."""
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class Dataset:
    """A validated photo table. `photos` holds labels only; `stream()` yields photos with their bytes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise DatasetError(f"{self.path} does not exist (the bundled sample is {SAMPLE})")
        self._src = f"read_parquet({_sql_str(str(self.path))})"
        con = duckdb.connect()
        try:
            cols = {r[0]: r[1] for r in con.sql(f"DESCRIBE SELECT * FROM {self._src}").fetchall()}
        except duckdb.Error as e:
            raise DatasetError(f"{self.path} is not a readable parquet file: {e}") from None
        self.columns = cols
        self._check_columns(cols)
        self.photos: list[Photo] = self._read_labels(con, cols)
        self._check_images()
        self._sha256: str | None = None

    # -- validation ----------------------------------------------------------------------------------
    def _check_columns(self, cols: dict[str, str]) -> None:
        missing = [c for c in REQUIRED_COLUMNS if c not in cols]
        if missing:
            raise DatasetError(f"{self.path}: missing required column(s) {', '.join(missing)} "
                               f"(found: {', '.join(cols) or 'none'})")
        expect = {"id": ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT",
                         "HUGEINT"),
                  "image": ("BLOB",), "is_hot_dog": ("BOOLEAN",), "category": ("VARCHAR",)}
        for col, types in expect.items():
            if cols[col] not in types:
                raise DatasetError(f"{self.path}: column {col} has type {cols[col]}, expected {' or '.join(types[:2])}")
        if "scored" in cols and cols["scored"] != "BOOLEAN":
            raise DatasetError(f"{self.path}: column scored has type {cols['scored']}, expected BOOLEAN")

    def _read_labels(self, con, cols) -> list[Photo]:
        scored = "scored" if "scored" in cols else "NULL::BOOLEAN"
        oid = "CAST(open_images_id AS VARCHAR)" if "open_images_id" in cols else "NULL::VARCHAR"
        rows = con.sql(f"SELECT id, category, is_hot_dog, {scored}, {oid} FROM {self._src} ORDER BY id").fetchall()
        if not rows:
            raise DatasetError(f"{self.path}: the table is empty: no photos to ask about")
        for col, idx in (("id", 0), ("category", 1), ("is_hot_dog", 2)):
            nulls = [r[0] for r in rows if r[idx] is None]
            if nulls:
                where = "" if col == "id" else f" (ids {_ids(nulls)})"
                raise DatasetError(f"{self.path}: column {col} has {len(nulls)} null value(s){where}")
        wide = [r[0] for r in rows if not -2 ** 63 <= r[0] < 2 ** 63]
        if wide:  # results are stored as Int64: refuse here, before any request is paid for
            raise DatasetError(f"{self.path}: column id has {len(wide)} value(s) that do not fit in a signed 64-bit "
                               f"integer (ids {_ids(wide)}): renumber them")
        seen, dups = set(), []
        for r in rows:
            if r[0] in seen:
                dups.append(r[0])
            seen.add(r[0])
        if dups:
            raise DatasetError(f"{self.path}: duplicate id(s) {_ids(sorted(set(dups)))}: ids must be unique")
        return [Photo(int(i), c, bool(h), s is not False, o) for i, c, h, s, o in rows]

    def _check_images(self) -> None:
        """Every image starts like a JPEG, PNG or WebP: its first 12 bytes, read batch by batch."""
        bad = []
        for rb in self._batches(STREAM_BATCH):
            ids = rb.column(0).to_pylist()
            heads = pc.binary_slice(_as_binary(rb.column(1)), 0, 12).to_pylist()
            bad += [i for i, head in zip(ids, heads) if head is None or sniff_image(head) is None]
        if bad:
            raise DatasetError(f"{self.path}: {len(bad)} image(s) are not JPEG, PNG or WebP by their bytes "
                               f"(ids {_ids(sorted(bad))})")

    def _batches(self, batch: int) -> Iterator[pa.RecordBatch]:
        """(id, image) record batches read straight from the file: memory stays at a few batches and one page
        whatever the row groups (duckdb's readers buffer the whole result of a query when the consumer is slow)."""
        pf = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
        try:
            yield from pf.iter_batches(batch_size=batch, columns=["id", "image"], use_threads=False)
        finally:
            pf.close()

    # -- access --------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.photos)

    @property
    def sha256(self) -> str:
        """Digest of the input file's bytes: what a resume and a manifest compare."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.path)
        return self._sha256

    def categories(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.photos:
            out[p.category] = out.get(p.category, 0) + 1
        return dict(sorted(out.items()))

    def stream(self, ids: set[int] | None = None, batch: int = STREAM_BATCH) -> Iterator[Photo]:
        """Photos with their bytes, in file order, `batch` at a time; only those in `ids` when given."""
        labels = {p.id: p for p in self.photos}
        for rb in self._batches(batch):
            # (a batch's bytes at once: a pyarrow scalar per photo costs more than the batch's copy)
            for pid, image in zip(rb.column(0).to_pylist(), rb.column(1).to_pylist()):
                if ids is not None and pid not in ids:
                    continue
                p = labels[pid]
                yield Photo(p.id, p.category, p.is_hot_dog, p.scored, p.open_images_id, image)

    def images(self, ids: list[int]) -> dict[int, bytes]:
        """Image bytes for a few ids (thumbnails, galleries)."""
        if not ids:
            return {}
        con = duckdb.connect()
        rows = con.execute(f"SELECT id, image FROM {self._src} WHERE id IN (SELECT unnest(?))", [list(ids)]).fetchall()
        return {int(i): img for i, img in rows}


def _as_binary(col: pa.Array) -> pa.Array:
    return col if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type) else col.cast(pa.large_binary())


def _ids(ids: list, most: int = 10) -> str:
    shown = ", ".join(str(i) for i in ids[:most])
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")


def cache_path(url: str, data_dir: Path | str = "data") -> Path:
    """Where a URL's table is cached: data/downloads/<sha256 of the whole URL, 16 hex>-<its file name>, so two
    URLs never share a copy (two hosts, two queries) and no URL lands on a local file such as the sample."""
    name = url.split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:60] or "dataset"
    if not name.endswith(".parquet"):
        name += ".parquet"
    return Path(data_dir) / DOWNLOADS / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}-{name}"


def _check_download(part: Path, url: str, content_type: str | None, head: bytes) -> None:
    """A downloaded file is a photo table (a parquet with the required columns) or DatasetError saying what the
    URL served instead: a page served with 200 must never reach the cache."""
    what = (f"it served {content_type or 'no content type'}, {part.stat().st_size} bytes starting "
            f"{head[:40]!r}")
    try:
        names = set(pq.ParquetFile(part).schema_arrow.names)
    except Exception:  # pyarrow raises ArrowInvalid, OSError, ... for a file that is not a parquet
        raise DatasetError(f"{url} is not a parquet file: {what}. Check the URL (a login or error page?)") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise DatasetError(f"{url} is a parquet file without the column(s) {', '.join(missing)} "
                           f"(found: {', '.join(sorted(names)) or 'none'}): not a photo table") from None


def resolve_input(spec: str | Path | None, data_dir: Path | str = "data", *, quiet: bool = False,
                  on_download: OnDownload | None = None) -> Path:
    """A local path as is; an http(s) URL downloaded once into data_dir/downloads/ (see cache_path), checked to
    be a photo table, then renamed into place (atomic), and read locally from then on."""
    spec = str(spec or DATA_URL)
    if not spec.startswith(("http://", "https://")):
        return Path(spec)
    target = cache_path(spec, data_dir)
    if target.exists():
        return target
    name = target.name.split("-", 1)[1]
    part = target.with_name(f"{target.name}.part-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with httpx.stream("GET", spec, timeout=httpx.Timeout(30.0, read=120.0), follow_redirects=True) as r:
            r.raise_for_status()
            total = int(r.headers.get("content-length") or 0) or None
            content_type, head, done = r.headers.get("content-type"), b"", 0
            with open(part, "wb") as f:
                for chunk in r.iter_bytes(1 << 16):
                    f.write(chunk)
                    if len(head) < 64:
                        head += chunk[:64]
                    done += len(chunk)
                    if on_download is not None and not quiet:
                        on_download(name, done, total)
            if on_download is not None and not quiet:
                on_download(name, done, total, True)
        _check_download(part, spec, content_type, head)
        os.replace(part, target)
    except (httpx.HTTPError, OSError) as e:
        raise DatasetError(f"could not download {spec} ({type(e).__name__}: {e}). Download it elsewhere and "
                           f"give the local file, or try the bundled sample ({SAMPLE})") from None
    finally:
        part.unlink(missing_ok=True)
    return target


def load_dataset(spec: str | Path | None = None, data_dir: Path | str = "data", *, quiet: bool = False,
                 on_download: OnDownload | None = None) -> Dataset:
    return Dataset(resolve_input(spec, data_dir, quiet=quiet, on_download=on_download))
