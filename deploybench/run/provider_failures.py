"""Whose fault a failed model call is: the one rule, used by the model gateway (run/gateway.py).

A call the provider refused for its own reasons (the key, the account's quota, a rate limit that
outlasted the retries, a server error, no answer at all) says nothing about the model or the
agent: the attempt is an infrastructure error (`provider_error`), retried on a fresh machine and
never scored. A call refused for what the agent sent (a malformed request, a context too long)
is the agent's: the answer goes back to it and the attempt goes on."""

from __future__ import annotations

# (status, what the gateway does first, what a failure that persists is)
RETRY = "retry"  # try again after a pause, up to the gateway's retries
PROVIDER = "provider_error"  # the provider's: the attempt is an infrastructure error
AGENT = "agent"  # the agent's request: passed back, the attempt goes on
OK = "ok"

TABLE: dict[int, tuple[str, str]] = {
    400: (AGENT, AGENT),  # malformed request, context too long: what the agent sent
    401: (PROVIDER, PROVIDER),  # the key: refused
    402: (PROVIDER, PROVIDER),  # payment required: the account
    403: (PROVIDER, PROVIDER),  # the key may not use this model or region
    404: (PROVIDER, PROVIDER),  # no such model or route at the provider: the configuration
    408: (RETRY, PROVIDER),  # the provider timed out
    409: (RETRY, PROVIDER),  # a conflict the provider asks to retry
    413: (AGENT, AGENT),  # the request is too large: what the agent sent
    422: (AGENT, AGENT),  # a request the provider could not process: what the agent sent
    429: (RETRY, PROVIDER),  # rate limit or quota
    529: (RETRY, PROVIDER),  # overloaded (Anthropic)
}


def first(status: int | None) -> str:
    """What to do with an answer of this status (None: no answer: refused, reset, timed out)."""
    if status is None:
        return RETRY
    if status < 400:
        return OK
    if status in TABLE:
        return TABLE[status][0]
    return RETRY if status >= 500 else AGENT


def last(status: int | None) -> str:
    """Whose a failure is once the retries are spent (or for a status never retried)."""
    if status is None:
        return PROVIDER
    if status < 400:
        return OK
    if status in TABLE:
        return TABLE[status][1]
    return PROVIDER if status >= 500 else AGENT
