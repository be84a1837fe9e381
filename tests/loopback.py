"""What the tests' loopback HTTP servers (stand-ins for OpenAI-compatible chat and images endpoints)
share: answering a request with a JSON body."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, body: Any, status: int = 200,
              headers: dict[str, str] | None = None) -> None:
    """Answer ``handler``'s request with ``status`` and ``body`` as JSON (plus ``headers``)."""
    payload = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
