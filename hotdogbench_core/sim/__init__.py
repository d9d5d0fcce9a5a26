"""An OpenRouter-compatible simulator on loopback (a peer of the real API: the runner only sees a base URL), and
a fake-clock model of capped servers (capmodel.py) for the limiter's tests and benchmarks."""
from .app import Simulator, image_digest, labels_from_parquet, serve_forever
from .config import DEMO_CONFIG, MODEL_PROFILES, SimConfig
from .counters import SimStats

__all__ = ["DEMO_CONFIG", "MODEL_PROFILES", "SimConfig", "SimStats", "Simulator", "image_digest",
           "labels_from_parquet", "serve_forever"]
