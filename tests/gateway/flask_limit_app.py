"""Flask-Limiter in front of an OpenAI-compatible upstream (tests/gateway/flask_limit.py starts it; a file of this folder may not be named after the package).

    python flask_limit_app.py PORT UPSTREAM LIMIT STRATEGY HEADERS LOG
      LIMIT: the `limits` library's notation ("30 per 5 second"); STRATEGY: moving-window | sliding-window-counter |
      fixed-window; HEADERS: on (X-RateLimit-Limit, -Remaining, -Reset in epoch seconds and Retry-After, on every
      answer) or off (Flask-Limiter's default: a bare 429); LOG: one line per chat request as it finishes:
      "<epoch ms> <status>".

Run by the gateway environment's Python (Flask-Limiter is no dependency of the project), on werkzeug's threaded
server; every chat request passes one limit counted for all clients, and everything goes upstream as it came.
"""
import sys
import time
import urllib.error
import urllib.request

from flask import Flask, Response, request
from flask_limiter import Limiter

port, upstream, limit, strategy, headers, log_path = sys.argv[1:7]
CHAT = "/v1/chat/completions"
FORWARDED = ("authorization", "content-type", "accept")

app = Flask(__name__)
limiter = Limiter(lambda: "everyone", app=app, strategy=strategy, headers_enabled=headers == "on",
                  storage_uri="memory://")


@app.get("/ready")
def ready():
    return "ok"


@app.after_request
def log_chat(response):
    if request.path == CHAT:
        with open(log_path, "a") as log:  # (appended per answer: kept if the server is killed)
            log.write(f"{int(time.time() * 1000)} {response.status_code}\n")
    return response


@app.route("/<path:path>", methods=["GET", "POST"])
@limiter.limit(limit, exempt_when=lambda: request.path != CHAT)
def forward(path):
    req = urllib.request.Request(f"{upstream}/{path}", data=request.get_data() if request.method == "POST" else None,
                                 method=request.method,
                                 headers={k: v for k, v in request.headers.items() if k.lower() in FORWARDED})
    try:
        with urllib.request.urlopen(req, timeout=120) as up:
            status, body, kind = up.status, up.read(), up.headers.get("content-type")
    except urllib.error.HTTPError as err:
        status, body, kind = err.code, err.read(), err.headers.get("content-type")
    except OSError as err:
        return {"error": {"message": f"upstream: {err}"}}, 502
    return Response(body, status=status, content_type=kind)


if __name__ == "__main__":
    app.run("127.0.0.1", int(port), threaded=True)
