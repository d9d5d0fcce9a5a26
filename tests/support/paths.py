"""Where things are, for tests that run the CLI or read the repository."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
