"""The environment a test's command-line process gets: this machine's, without OpenRouter's settings (a
developer's key or base URL must never reach a test), with the key the test gives."""
from __future__ import annotations

import os


def cli_env(api_key: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER")}
    if api_key is not None:
        env["OPENROUTER_API_KEY"] = api_key
    env.update(extra)
    return env
