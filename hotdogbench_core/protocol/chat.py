"""Chat completions (POST /v1/chat/completions): the question as text beside the photo, a JSON verdict back.

The body is byte for byte the reference script's; the verdict is read as the reference's parse() did.
"""
from __future__ import annotations

import json
import math
import re
import time

from .answers import (RAW_CHARS, RETRY_STATUSES, Answer, Outcome, Retry, classify_error, error_text, retry_for,
                      upstream_rate_limited)
from .answers import as_dict, as_int, as_num, as_str
from .endpoint import Asked, Endpoint, Reply, find_image
from .logprobs import p_true_from_logprobs

QUESTION = 'Is the food in this photo a hot dog? Answer with JSON: {"hot_dog": true} or {"hot_dog": false}.'
SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "strict": True,
        "schema": {"type": "object", "properties": {"hot_dog": {"type": "boolean"}},
                   "required": ["hot_dog"], "additionalProperties": False},
    },
}
MAX_TOKENS = 1024
# The per-model opt-in for log-probabilities (OpenAI's parameters; OpenRouter passes them to providers that have
# them): P(true) at the verdict token becomes the row's p_hot_dog. Added after the model's own params.
LOGPROBS = {"logprobs": True, "top_logprobs": 5}


def parse_verdict(text: str | None) -> bool | None:
    """{"hot_dog": true|false} as plain JSON or in a ```json fence; else the reference's substring fallback."""
    if not isinstance(text, str):
        return None
    try:
        v = json.loads(text.strip().removeprefix("```json").removesuffix("```").strip())["hot_dog"]
        return v if isinstance(v, bool) else None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        low = text.lower()
        if '"hot_dog": true' in low or '"hot_dog":true' in low:
            return True
        if '"hot_dog": false' in low or '"hot_dog":false' in low:
            return False
        return None


class Chat(Endpoint):
    name = "chat"
    path = "/v1/chat/completions"
    id_prefix = "gen-"
    logprobs = LOGPROBS

    def body(self, model: str, params: dict, image_url: str, openrouter: bool = True) -> dict:
        return {
            "model": model,
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": image_url}},
                {"type": "text", "text": QUESTION},
            ]}],
            "max_tokens": MAX_TOKENS,
            "response_format": SCHEMA,
            **({"usage": {"include": True}} if openrouter else {}),  # OpenRouter's: usage and cost in the answer
            **params,
        }

    def settings(self, params: dict, openrouter: bool = True) -> dict:
        return {"endpoint": self.path, "question": QUESTION, "max_tokens": MAX_TOKENS, "response_format": SCHEMA,
                **({"usage": {"include": True}} if openrouter else {}), **params}

    def reword(self, body: dict, text: str) -> dict:
        content = [{**part, "text": text} if part.get("type") == "text" else part
                   for part in body["messages"][0]["content"]]
        return {**body, "messages": [{**body["messages"][0], "content": content}, *body["messages"][1:]]}

    def read_answer(self, data: dict, usage: dict, provider: str | None) -> Outcome:
        common = dict(prompt_tokens=as_int(usage.get("prompt_tokens")),
                      completion_tokens=as_int(usage.get("completion_tokens")),
                      reasoning_tokens=as_int(as_dict(usage.get("completion_tokens_details")).get("reasoning_tokens")),
                      cost_usd=as_num(usage.get("cost")), provider=provider)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            if "error" in data:
                return classify_error(200, data["error"], {})
            if not usage:  # nothing billed and nothing said: worth asking again
                return Retry("200/nochoices", "failure")
            return Answer(None, None, error="response without choices", **common)
        choice = choices[0]
        if choice.get("error") is not None:
            err = choice["error"]
            code = as_dict(err).get("code")
            retryable = isinstance(code, int) and code in RETRY_STATUSES
            if (retryable or upstream_rate_limited(err)) and not usage:  # (a provider's rate limit, whatever its code)
                return retry_for(code if retryable else 0, err, {}, None, f"200/err{str(code)[:20]}")
            content = as_str(as_dict(choice.get("message")).get("content"))
            return Answer(parse_verdict(content), content[:RAW_CHARS] if content else None,
                          error=error_text(200, err), p_hot_dog=_p_hot_dog(choice), **common)
        content = as_dict(choice.get("message")).get("content")
        if not isinstance(content, str):
            # null content: a reasoning model spent max_tokens thinking. Billed, unanswered, not an error (as reference)
            return Answer(None, "" if content is None else str(content)[:RAW_CHARS], **common)
        return Answer(parse_verdict(content), content[:RAW_CHARS], p_hot_dog=_p_hot_dog(choice), **common)

    # -- the server's side ---------------------------------------------------------------------------------
    def read_request(self, body: dict) -> Asked:
        url, text_chars = None, 0
        msgs = body.get("messages")
        for msg in msgs if isinstance(msgs, list) else ():
            if isinstance(msg, dict):
                u, n = find_image(msg.get("content"))
                url, text_chars = url or u, text_chars + n
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens <= 0:
            max_tokens = None
        reasoning = body.get("reasoning")
        top = body.get("top_logprobs")
        top = (min(20, max(0, top)) if isinstance(top, int) and not isinstance(top, bool) else 0) \
            if body.get("logprobs") is True else None
        return Asked(url, text_chars, max_tokens, reasoning if isinstance(reasoning, dict) else {}, top_logprobs=top)

    def reply(self, asked: Asked, reply: Reply, price) -> tuple[dict, float, bool]:
        finish, answered, reasoning = "stop", False, reply.reasoning_tokens
        if reply.empty:
            content, out = None, 0
        elif reply.unanswered is not None:
            content, out = reply.unanswered, 5
        else:
            content, out, answered = ('{"hot_dog": true}' if reply.verdict else '{"hot_dog": false}'), 7, True
            if reply.fenced:
                content, out = f"```json\n{content}\n```", out + 4
        if asked.max_tokens and reasoning + out > asked.max_tokens:
            content, out, reasoning, finish, answered = None, 0, asked.max_tokens, "length", False
        prompt, completion = reply.prompt_tokens, reasoning + out
        cost = price(prompt, completion)
        logprobs = None
        if asked.top_logprobs is not None and reply.logprobs and isinstance(content, str):
            p_true = reply.p if reply.verdict else 1.0 - reply.p
            logprobs = {"content": token_logprobs(content, p_true, asked.top_logprobs), "refusal": None}
        resp = {
            "id": self.id_prefix + reply.id, "provider": reply.provider, "model": reply.model,
            "object": "chat.completion", "created": int(time.time()),
            "choices": [{"logprobs": logprobs, "finish_reason": finish, "native_finish_reason": finish, "index": 0,
                         "message": {"role": "assistant", "content": content, "refusal": None, "reasoning": None}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      "cost": cost, "is_byok": False, "prompt_tokens_details": {"cached_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": reasoning}},
        }
        return resp, cost, answered


def _p_hot_dog(choice: dict) -> float | None:
    """P(true) at the verdict token, when the choice carries log-probabilities (else None)."""
    lp = choice.get("logprobs")
    return None if lp is None else p_true_from_logprobs(lp)


_TOKEN = re.compile(r"\s?\w+|\s?[^\w\s]+|\s+")
_FILLERS = (" null", ' "', " 1", " maybe", " no", " yes", " 0", " none", " unknown", "}", " ")
_LEAK = 1e-4  # the mass the fillers share at the verdict token


def _entry(token: str, logprob: float, top: list[tuple[str, float]]) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top]}


def token_logprobs(content: str, p_true: float, top: int) -> list[dict]:
    """OpenAI-shaped logprobs.content for `content` (the server's side: the simulator answers with it): the
    verdict token (the first "true"/"false" after "hot_dog") says P(true) = p_true among its `top` alternatives
    (the other word, then fillers sharing 1e-4 of the mass); every other token is near certain."""
    p_true = min(1.0 - 1e-9, max(1e-9, p_true))
    out, after_key, done = [], False, False
    for tok in _TOKEN.findall(content):
        word = tok.strip().lower()
        if after_key and not done and word in ("true", "false"):
            other = tok.replace(tok.strip(), "false" if word == "true" else "true")
            mine = p_true if word == "true" else 1.0 - p_true
            alts = [(tok, math.log(mine * (1 - _LEAK))), (other, math.log((1 - mine) * (1 - _LEAK)))]
            fill = [f for f in _FILLERS if f != tok][:max(0, top - 2)]
            alts += [(f, math.log(_LEAK / len(fill))) for f in fill]
            alts = sorted(alts, key=lambda a: -a[1])[:top]
            out.append(_entry(tok, math.log(mine * (1 - _LEAK)), alts))
            done = True
            continue
        after_key = after_key or "hot_dog" in tok.lower()
        fill = [f for f in _FILLERS if f != tok][:max(0, top - 1)]
        out.append(_entry(tok, -1e-4, ([(tok, -1e-4)] + [(f, -12.0 - i) for i, f in enumerate(fill)])[:top]))
    return out


CHAT = Chat()
