// express-rate-limit, the Node middleware, in front of an OpenAI-compatible upstream (tests/gateway/express.py).
// node express_limit.cjs PORT UPSTREAM WINDOW_MS LIMIT HEADERS LOG
//   HEADERS: draft-6 | draft-7 | draft-8 (the IETF RateLimit fields, and the legacy X-RateLimit-* off), or legacy
//   (X-RateLimit-Limit, -Remaining, -Reset in epoch seconds only). Every form sends Retry-After on a 429.
//   LOG: one line per chat request as it finishes: "<epoch ms> <status>".
// Its MemoryStore counts a fixed window per client that starts at the client's first request after the last one.
"use strict";
const fs = require("node:fs");
const express = require("express");
const { rateLimit } = require("express-rate-limit");

const [port, upstream, windowMs, limit, headers, logPath] = process.argv.slice(2);
const app = express();
app.get("/ready", (req, res) => res.send("ok"));

app.use("/v1/chat/completions", (req, res, next) => {
  res.on("finish", () => fs.appendFileSync(logPath, `${Date.now()} ${res.statusCode}\n`));  // (kept if killed)
  next();
});
app.use("/v1/chat/completions", rateLimit({
  windowMs: Number(windowMs),
  limit: Number(limit),
  standardHeaders: headers === "legacy" ? false : headers,
  legacyHeaders: headers === "legacy",
  identifier: "window",
}));
app.use(express.raw({ type: () => true, limit: "64mb" }));
app.use(async (req, res) => {  // everything else goes upstream as it came
  const forward = {};
  for (const name of ["authorization", "content-type", "accept"]) {
    if (req.headers[name]) forward[name] = req.headers[name];
  }
  try {
    const body = ["GET", "HEAD"].includes(req.method) ? undefined : req.body;
    const up = await fetch(upstream + req.originalUrl, { method: req.method, headers: forward, body });
    res.status(up.status);
    const type = up.headers.get("content-type");
    if (type) res.set("content-type", type);
    res.send(Buffer.from(await up.arrayBuffer()));
  } catch (err) {
    res.status(502).json({ error: { message: `upstream: ${err}` } });
  }
});
const server = app.listen(Number(port), "127.0.0.1");
process.on("SIGTERM", () => {  // the last answers' log lines are written before it goes
  server.close();
  setTimeout(() => process.exit(0), 200);
});
