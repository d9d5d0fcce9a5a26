"""OpenRouter's Decisions API (POST /alpha/decisions): the photo in `state`, a typed question, a probability back.

The question is of type "noul" (a probability that the answer is yes); a verdict is noul >= 0.5, as in the
reference script.
"""
from __future__ import annotations

from .answers import RAW_CHARS, Answer, Outcome, Retry, as_dict, as_int, as_num
from .endpoint import Asked, Endpoint, Reply, RequestRejected, find_image

INSTRUCTIONS = "Is the food in the photo a hot dog?"
QUESTION_ID = "hot_dog"


class Decisions(Endpoint):
    name = "decisions"
    path = "/alpha/decisions"
    id_prefix = "gen-dec-"
    probability = "noul"

    def body(self, model: str, params: dict, image_url: str, openrouter: bool = True) -> dict:
        return {"model": model, "state": ["Photo:", {"type": "image_url", "image_url": {"url": image_url}}],
                "questions": {QUESTION_ID: {"type": "noul", "instructions": INSTRUCTIONS}}, **params}

    def settings(self, params: dict, openrouter: bool = True) -> dict:
        return {"endpoint": self.path, "instructions": INSTRUCTIONS, **params}

    question_setting = "instructions"

    def reword(self, body: dict, text: str) -> dict:
        return {**body, "questions": {QUESTION_ID: {**body["questions"][QUESTION_ID], "instructions": text}}}

    def read_answer(self, data: dict, usage: dict, provider: str | None) -> Outcome:
        common = dict(prompt_tokens=as_int(usage.get("input_tokens")), completion_tokens=as_int(usage.get("output_tokens")),
                      cost_usd=as_num(usage.get("cost")), provider=provider)
        answers = data.get("answers")
        if not isinstance(answers, dict):
            if not usage:
                return Retry("200/noanswers", "failure")
            return Answer(None, None, error="decisions response without answers", **common)
        p = as_dict(answers.get(QUESTION_ID)).get("noul")
        if as_num(p) is None or not 0.0 <= p <= 1.0:
            return Answer(None, None if p is None else str(p)[:RAW_CHARS],
                          error=f"decisions answer hot_dog.noul is not a probability: {str(p)[:60]}", **common)
        return Answer(p >= 0.5, str(p), p_hot_dog=float(p), **common)

    # -- the server's side ---------------------------------------------------------------------------------
    def read_request(self, body: dict) -> Asked:
        url, text_chars = find_image(body.get("state"))
        questions = body.get("questions")
        if not isinstance(questions, dict) or not questions:
            raise RequestRejected("questions must be a non-empty object")
        for q in questions.values():
            if not isinstance(q, dict) or q.get("type") != "noul":
                raise RequestRejected("unsupported question type (the simulator answers noul)")
        return Asked(url, text_chars, questions=tuple(questions))

    def reply(self, asked: Asked, reply: Reply, price) -> tuple[dict, float, bool]:
        noul = None if reply.empty else (reply.p if reply.verdict else 1.0 - reply.p)
        inp, out = reply.prompt_tokens, 3 * len(asked.questions)
        cost = price(inp, out)
        resp = {"id": self.id_prefix + reply.id, "model": reply.model, "provider": reply.provider,
                "answers": {q: {"type": "noul", "noul": noul} for q in asked.questions},
                "usage": {"input_tokens": inp, "output_tokens": out, "cost": cost}}
        return resp, cost, noul is not None


DECISIONS = Decisions()
