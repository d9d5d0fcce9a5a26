"""What is sent and what comes back: the model registry, the request kinds (chat, Decisions), each model's
request, and the classification of every response. Pure: no network, no clock."""
from .answers import Answer, Failed, Fatal, Outcome, Retry, classify, parse_retry_after
from .chat import QUESTION, SCHEMA, parse_verdict
from .endpoints import BY_PATH, ENDPOINTS, endpoint
from .models import MODELS, PRESETS, ModelSpec, UnknownModelError, resolve_models
from .request import Request, body_for, request_for

__all__ = ["BY_PATH", "ENDPOINTS", "MODELS", "PRESETS", "QUESTION", "SCHEMA", "Answer", "Failed", "Fatal", "ModelSpec",
           "Outcome", "Request", "Retry", "UnknownModelError", "body_for", "classify", "endpoint", "parse_retry_after",
           "parse_verdict", "request_for", "resolve_models"]
