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
out = {"image_hex": IMAGE.hex(), "bodies": bodies, "models": list(ref.MODELS),
       "retry_statuses": sorted(ref.RETRY), "question": ref.QUESTION, "schema": ref.SCHEMA,
       "parse": [[t, ref.parse(t)] for t in TEXTS]}
target = Path(__file__).resolve().parents[1] / "tests/fixtures/reference_bodies.json"
target.write_text(json.dumps(out, indent=1) + "\n")
print(f"wrote {target}")
