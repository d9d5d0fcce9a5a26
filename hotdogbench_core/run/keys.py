"""Find the OpenRouter key: the environment first, then ./.env. The key is only ever returned, never shown."""
from __future__ import annotations

import os
from pathlib import Path

KEY_NAMES = ("OPENROUTER_API_KEY", "OPENROUTER_TOKEN")


def find_key(cwd: Path | None = None) -> str | None:
    for name in KEY_NAMES:
        if os.environ.get(name):
            return os.environ[name]
    env = Path(cwd or Path.cwd()) / ".env"
    if env.is_file():
        for line in env.read_text(errors="replace").splitlines():
            k, _, v = line.partition("=")
            k = k.strip().removeprefix("export ").strip()
            if k in KEY_NAMES and v.strip():
                return v.strip().strip('"').strip("'")
    return None


def mask(key: str | None) -> str:
    """What a UI may show of a key: whether there is one, never any of its characters."""
    return "key found" if key else "no key"
