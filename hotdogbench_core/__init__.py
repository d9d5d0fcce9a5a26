"""hotdogbench: ask vision-language models "is the food in this photo a hot dog?" and score the answers.

The public surface is small: load a dataset, choose models, run them against OpenRouter (or the bundled
simulator), and read the results back.
"""
__version__ = "0.1.0"

from .adaptive_limiter import AdaptiveLimiter
from .answers import classify, parse_verdict
from .dataset import DATA_URL, SAMPLE, Dataset, DatasetError, load_dataset
from .keys import find_key
from .limiter import AIMDLimiter, LimitChange
from .models import MODELS, PRESETS, QUESTION, SCHEMA, body_for, resolve_models
from .results import Result, summarize
from .runner import (DEFAULT_BASE_URL, LimitChanged, ModelFinished, ModelRun, ModelStarted, PhotoDone, RunError,
                     RunSettings)
from .session import RunResult, run_models, run_models_sync

__all__ = [
    "__version__", "classify", "parse_verdict", "DATA_URL", "SAMPLE", "Dataset", "DatasetError", "load_dataset",
    "find_key", "AdaptiveLimiter", "AIMDLimiter", "LimitChange", "MODELS", "PRESETS", "QUESTION", "SCHEMA", "body_for",
    "resolve_models", "Result", "summarize", "DEFAULT_BASE_URL", "LimitChanged", "ModelFinished", "ModelRun",
    "ModelStarted", "PhotoDone", "RunError", "RunSettings", "RunResult", "run_models", "run_models_sync",
]
