"""Write tests/fixtures/reference_bodies.json from the reference script (../shared/seed/hotdogbench.py).

Run once from the repo root: `uv run python scripts/make_reference_fixtures.py [path/to/hotdogbench.py]`.
The fixture holds, for every registry model, the exact request body bytes the reference sends (as httpx
serialises `json=`) for a small fixed image, and the reference's parse() on a set of answer texts.
"""
import importlib.util
import json
import sys
from pathlib import Path

seed = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared/seed/hotdogbench.py")
spec = importlib.util.spec_from_file_location("reference", seed)
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)

IMAGE = bytes(range(256)) * 3 + b"\xff\xd8\xff"  # fixed bytes: every base64 quirk (+, /, padding) appears
TEXTS = ['{"hot_dog": true}', '{"hot_dog": false}', '```json\n{"hot_dog": true}\n```', ' {"hot_dog":false} ',
         'Sure! {"hot_dog": true} is my answer', '{"hot_dog": "yes"}', 'no idea', '', '{"HOT_DOG": TRUE}',
         '[1, 2]', '{"hot_dog": null}', 'The answer: "hot_dog":false.', '```json{"hot_dog": false}```']
bodies = {}
for model in ref.MODELS:
    body = ref.body_for(model, IMAGE)
    # httpx's json= encoding, which is what went over the wire
    bodies[model] = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# summarize() on a seeded mix of answers, misses, errors, unanswered rows and an unscored bonus row
import random
rng = random.Random(7)
results = []
for i in range(1, 61):
    cat = ["hot_dog", "taco", "sandwich", "burrito"][i % 4]
    r = ref.Result(id=i, open_images_id=f"oi{i}", category=cat, is_hot_dog=cat == "hot_dog")
    roll = rng.random()
    if roll < 0.1:
        r.error = "retries exhausted: 429,429,429"
        r.retries = ["429"] * 8
    else:
        r.latency_s = round(rng.uniform(0.2, 3.0), 3)
        r.prompt_tokens, r.completion_tokens = rng.randint(300, 900), rng.randint(3, 40)
        r.reasoning_tokens = rng.choice([None, 0, 12])
        r.cost_usd = round(rng.uniform(1e-5, 1e-3), 7)
        r.provider = rng.choice(["OpenAI", "Azure"])
        r.pred = None if roll < 0.15 else (r.is_hot_dog if rng.random() < 0.85 else not r.is_hot_dog)
        if rng.random() < 0.2:
            r.retries = ["429"]
    results.append(r)
bonus = ref.Result(id=1001, open_images_id=None, category="magritte", is_hot_dog=True, scored=False, pred=False,
                   latency_s=1.0, cost_usd=0.001)
results.append(bonus)
from dataclasses import asdict
summary_case = {"results": [asdict(r) for r in results], "wall": 12.3456,
                "summary": ref.summarize("openai/gpt-6-luna", results, 12.3456)}
out = {"summary_case": summary_case, "image_hex": IMAGE.hex(), "bodies": bodies, "models": list(ref.MODELS),
       "retry_statuses": sorted(ref.RETRY), "question": ref.QUESTION, "schema": ref.SCHEMA,
       "parse": [[t, ref.parse(t)] for t in TEXTS]}
target = Path(__file__).resolve().parents[1] / "tests/fixtures/reference_bodies.json"
target.write_text(json.dumps(out, indent=1) + "\n")
print(f"wrote {target}")
