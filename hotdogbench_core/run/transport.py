"""The HTTP exchange: one POST, its answer read up to a size cap. An aiohttp session by default; any httpx client
(with any transport, e.g. a MockTransport) is accepted too."""
from __future__ import annotations

import asyncio
import contextlib

import aiohttp
import httpx
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

MAX_BODY_BYTES = 4 << 20  # a response larger than this is no verdict: refuse it instead of holding it
TRANSPORT_ERRORS = (aiohttp.ClientError, httpx.HTTPError, OSError, TimeoutError)


def new_client(url: str, max_connections: int) -> aiohttp.ClientSession:
    """The default HTTP client: an aiohttp session, one connection per request in flight.

    httpx's own connection pool slows sharply with hundreds of connections, and even its aiohttp transport
    costs about half of the client's time in httpx's request and response objects; a plain aiohttp session
    keeps the client far from being the bottleneck. TLS settings come from httpx (certifi); an HTTP(S)_PROXY
    from the environment is honoured as httpx does (looked up once: aiohttp's trust_env would look it up in a
    thread on every request); cookies are ignored. The per-request deadline is applied by the caller.
    """
    proxy, proxy_auth = None, None
    with contextlib.suppress(LookupError):
        proxy, proxy_auth = get_env_proxy_for_url(URL(url))
    connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0, ssl=httpx.create_ssl_context())
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None),
                                 cookie_jar=aiohttp.DummyCookieJar(), proxy=proxy, proxy_auth=proxy_auth)


class BodyStalled(TimeoutError):
    """The headers came, the body did not finish within the body timeout (a stalled or dripping server)."""


async def post(client, url: str, body: bytes, headers: dict, body_timeout: float | None = None
               ) -> tuple[int, object, bytes | None]:
    """(status, headers, body), body None when over MAX_BODY_BYTES; headers answer .get() case-insensitively.
    The body must arrive within body_timeout seconds of the headers (else BodyStalled)."""
    if isinstance(client, httpx.AsyncClient):
        return await _post_httpx(client, url, body, headers, body_timeout)
    return await _post_aiohttp(client, url, body, headers, body_timeout)


async def _read_capped(chunks_of, body_timeout: float | None) -> bytes | None:
    """Every chunk of a body, None past MAX_BODY_BYTES; BodyStalled when it takes longer than body_timeout."""
    chunks, size = [], 0
    try:
        async with asyncio.timeout(body_timeout):
            async for chunk in chunks_of:
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    return None
                chunks.append(chunk)
    except TimeoutError:
        raise BodyStalled(f"the body was not complete {body_timeout:g} s after the headers") from None
    return b"".join(chunks)


async def _post_aiohttp(session: aiohttp.ClientSession, url: str, body: bytes, headers: dict,
                        body_timeout: float | None):
    async with session.post(url, data=body, headers=headers) as response:
        # leaving the block early (too large, stalled) closes the connection: the rest is never read
        return response.status, response.headers, await _read_capped(response.content.iter_any(), body_timeout)

async def _post_httpx(client: httpx.AsyncClient, url: str, body: bytes, headers: dict,
                      body_timeout: float | None):
    request = client.build_request("POST", url, content=body, headers=headers)
    response = await client.send(request, stream=True)
    try:
        if response.is_stream_consumed:  # e.g. a MockTransport's response, read already
            data = response.content
            return response.status_code, response.headers, data if len(data) <= MAX_BODY_BYTES else None
        return response.status_code, response.headers, await _read_capped(response.aiter_raw(), body_timeout)
    finally:
        await response.aclose()
