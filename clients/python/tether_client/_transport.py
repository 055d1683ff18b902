"""What the sync and async clients share: building a request from an
operation's parts, and reading its answer. No I/O here."""

from __future__ import annotations

import json as jsonlib
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote

import httpx

from .errors import problem_from_response

# As Go's url.PathEscape: a node id like "identity:alice" keeps its colon.
_PATH_SAFE = "!$&'()*+=:@"


def build(
    base_url: str,
    token: Optional[str],
    method: str,
    path: str,
    *,
    path_params: Optional[Mapping[str, str]],
    query: Optional[Mapping[str, Any]],
    headers: Optional[Mapping[str, Any]],
    json: Any,
    content: Optional[bytes],
    content_type: Optional[str],
    accept: Optional[str],
) -> Tuple[str, str, Dict[str, Any], Dict[str, str], Optional[bytes]]:
    """The method, URL, query, headers and body of one request."""
    for name, value in (path_params or {}).items():
        if value is None or value == "":
            raise ValueError(f"{name} must not be empty")
        if str(value) in (".", ".."):
            # A URL library resolves dot segments: the request would go to
            # another route. No Tether id is "." or "..".
            raise ValueError(f"{name} must not be {value!r}")
        path = path.replace("{" + name + "}", quote(str(value), safe=_PATH_SAFE))
    params: Dict[str, Any] = {}
    for key, arg in (query or {}).items():
        if arg is not None:
            params[key] = ("true" if arg else "false") if isinstance(arg, bool) else arg
    hdrs: Dict[str, str] = {}
    if token:
        hdrs["Authorization"] = "Bearer " + token
    if accept:
        hdrs["Accept"] = accept
    for header, given in (headers or {}).items():
        if given is not None:
            hdrs[header] = str(given)
    body: Optional[bytes] = None
    if content is not None:
        body = content
        hdrs["Content-Type"] = content_type or "application/octet-stream"
    elif json is not None:
        body = jsonlib.dumps(json, separators=(",", ":")).encode()
        hdrs["Content-Type"] = content_type or "application/json"
    return method, base_url + path, params, hdrs, body


def read(response: httpx.Response, result: str) -> Any:
    """The answer's value, or the ProblemError of an error status."""
    if response.status_code >= 400:
        raise problem_from_response(response)
    if result == "json":
        if response.status_code in (202, 204, 304) or not response.content:
            return None
        if _media_type(response) == "text/event-stream":
            return _last_event_data(response.text)
        return response.json()
    if result == "text":
        return response.text
    if result == "bytes":
        return response.content
    return None


def timeout_for(base: httpx.Timeout, long_poll_ms: Optional[int], override: Optional[float]) -> httpx.Timeout:
    """The timeout of one request: the client's (or the override), with the
    read timeout stretched by a long poll's wait."""
    if override is not None:
        base = httpx.Timeout(override)
    if not long_poll_ms:
        return base
    read = None if base.read is None else base.read + long_poll_ms / 1000
    return httpx.Timeout(connect=base.connect, read=read, write=base.write, pool=base.pool)


def _media_type(response: httpx.Response) -> str:
    return str(response.headers.get("content-type", "")).split(";")[0].strip().lower()


def _last_event_data(text: str) -> Any:
    """The JSON of the last event of a finished server-sent-event stream (an
    MCP POST answered as a stream ends with its JSON-RPC response)."""
    last: Optional[str] = None
    data: List[str] = []
    for line in text.splitlines() + [""]:
        if line.startswith("data:"):
            data.append(line[6:] if line[5:6] == " " else line[5:])
        elif line == "" and data:
            last, data = "\n".join(data), []
    return None if last is None else jsonlib.loads(last)
