"""Photo tables for tests: tiny JPEG-by-magic payloads written to real parquet files with duckdb."""
from pathlib import Path

import duckdb


def jpeg_bytes(seed: int, size: int = 200) -> bytes:
    """A tiny distinct JPEG-by-magic-bytes payload (the harness never decodes images)."""
    return b"\xff\xd8\xff\xe0" + seed.to_bytes(4, "big") + bytes((seed * 7 + i) % 256 for i in range(size))


def write_table(path: Path, rows: list[dict], types: dict[str, str] | None = None) -> Path:
    """Write rows to a real parquet file with duckdb, with explicit column types."""
    types = types or {"id": "BIGINT", "image": "BLOB", "is_hot_dog": "BOOLEAN", "category": "VARCHAR",
                      "scored": "BOOLEAN", "open_images_id": "VARCHAR"}
    cols = [c for c in types if any(c in r for r in rows)] or list(types)
    con = duckdb.connect()
    con.execute("CREATE TABLE t (" + ", ".join(f'"{c}" {types[c]}' for c in cols) + ")")
    for r in rows:
        con.execute(f"INSERT INTO t VALUES ({', '.join('?' for _ in cols)})", [r.get(c) for c in cols])
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    return path


def make_rows(n_per_cat: int = 5, cats=("hot_dog", "taco", "sandwich"), extras: int = 1) -> list[dict]:
    rows, i = [], 1
    for c in cats:
        for _ in range(n_per_cat):
            rows.append({"id": i, "image": jpeg_bytes(i), "is_hot_dog": c == "hot_dog", "category": c,
                         "scored": True, "open_images_id": f"img{i:04d}"})
            i += 1
    for k in range(extras):
        rows.append({"id": 1001 + k, "image": jpeg_bytes(1001 + k), "is_hot_dog": True, "category": "magritte",
                     "scored": False, "open_images_id": None})
    return rows
