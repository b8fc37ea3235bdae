"""SERVICE (SPARQL 1.1 Federated Query): a pattern evaluated by a remote SPARQL endpoint.

``SERVICE <endpoint> { P }`` sends ``SELECT * WHERE { P }`` to the endpoint by the SPARQL 1.1 Protocol (an HTTP POST
of a form ``query=...``, asking for ``application/sparql-results+json``), once per evaluation of the query: the
solutions it answers are joined with the rest of the query as any group's (section 2.1 of the recommendation:
the service pattern is evaluated by the endpoint, then joined). A continuous query calls the endpoint once per
evaluation, so a replay once, and live mode once per micro-batch that evaluates the query; the answers are the
same at every instant of that evaluation. The solutions are held on the driver (a local relation of the plan).

A failure (the endpoint cannot be reached, answers late, with an HTTP error, or with what is not a SPARQL JSON
result) raises :class:`ServiceCallError` naming the endpoint and the cause; with ``SERVICE SILENT`` it gives the one
empty solution instead, as the recommendation prescribes (section 4), and the failure is logged as a warning.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request

from rspark.errors import RsparkError
from rspark.results import from_json

log = logging.getLogger("rspark.service_call")

TIMEOUT_S = 30.0  # seconds an endpoint may take to answer
MAX_BYTES = 256 * 1024 * 1024  # the largest answer read (its solutions are held on the driver)
ACCEPT = "application/sparql-results+json"


class ServiceCallError(RsparkError):
    """A SERVICE endpoint that did not answer the pattern: its address and the cause."""


def call(endpoint: str, query: str, timeout: float | None = None) -> tuple[list[str], list[dict]]:
    """The variables and solutions (variable -> term) the endpoint answers to ``query``, within ``timeout``
    seconds (None: :data:`TIMEOUT_S`)."""
    timeout = TIMEOUT_S if timeout is None else timeout
    body = urllib.parse.urlencode({"query": query}).encode("utf-8")
    request = urllib.request.Request(endpoint, data=body, method="POST", headers={
        "Accept": ACCEPT, "Content-Type": "application/x-www-form-urlencoded", "User-Agent": "rspark"})
    where = f"SERVICE <{endpoint}>"
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        detail = exc.read(400).decode("utf-8", "replace").strip()
        raise ServiceCallError(f"{where}: the endpoint answered HTTP {exc.code} {exc.reason}"
                               + (f": {detail}" if detail else "")) from None
    except TimeoutError:
        raise ServiceCallError(f"{where}: no answer within {timeout:g} s") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise ServiceCallError(f"{where}: no answer within {timeout:g} s") from None
        raise ServiceCallError(f"{where}: the endpoint cannot be reached ({reason})") from None
    except (OSError, ValueError) as exc:  # a malformed address, a connection reset
        raise ServiceCallError(f"{where}: {exc}") from None
    if len(data) > MAX_BYTES:
        raise ServiceCallError(f"{where}: the answer is larger than {MAX_BYTES // (1024 * 1024)} MB")
    try:
        doc = json.loads(data.decode("utf-8"))
        if not isinstance(doc, dict) or "results" not in doc:  # (an ASK's boolean, or no results at all)
            raise ValueError("no results member")
        answer = from_json(doc)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ServiceCallError(f"{where}: the answer is not a SPARQL JSON result of a SELECT ({exc})") from None
    return list(answer.vars), answer.rows
