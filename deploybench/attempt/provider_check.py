"""The pre-flight call to each agent's model provider, before the cost prompt and any machine:
a key the provider refuses, or a provider that cannot be reached, would otherwise end every
attempt at its first model call and be scored as the model's failure.

The call lists the provider's models (GET .../models): it costs no tokens, needs the key, and
every OpenAI-compatible server and Anthropic's API answer it. What an answer means is one
table (ANSWERS), so the rule is read in one place and tested row by row."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping

from deploybench.attempt.agents import AgentSpec

TIMEOUT_S = 20
# HTTP status -> what it says of the run: None (go on) or why the run cannot start. A server
# without a model list (404, 405) was reached and is not judged on the key.
ANSWERS: dict[int, str | None] = {
    200: None,
    404: None,
    405: None,
    401: "refused the key",
    403: "refused the key",
    429: "is out of quota or rate-limiting",
}


def meaning(status: int) -> str | None:
    """Why a run cannot start, from the status the provider answered; None: it can."""
    if status in ANSWERS:
        return ANSWERS[status]
    if status >= 500:
        return f"answered with a server error ({status})"
    if status >= 400:
        return f"answered {status}"
    return None


def _request(spec: AgentSpec, key: str) -> urllib.request.Request:
    base = spec.base_url.rstrip("/")
    if spec.api == "anthropic":
        # Anthropic's base URL is given without /v1 (its SDK adds /v1/messages).
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        return urllib.request.Request(f"{base}/v1/models", headers=headers)
    return urllib.request.Request(f"{base}/models", headers={"Authorization": f"Bearer {key}"})


def problems(specs: list[AgentSpec], environ: Mapping[str, str]) -> list[str]:
    """One line per agent whose provider refuses its key or cannot be reached. An agent with
    no base URL or no key from the controller is not called (nothing to check)."""
    lines, seen = [], set()
    for spec in specs:
        if not spec.base_url or not spec.env_from_controller:
            continue
        key_name = spec.env_from_controller[0]
        key = environ.get(key_name, "")
        if (spec.base_url, spec.api, key) in seen:
            continue
        seen.add((spec.base_url, spec.api, key))
        request = _request(spec, key)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                why = meaning(answer.status)
        except urllib.error.HTTPError as exc:
            why = meaning(exc.code)
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            why = f"cannot be reached ({reason})"
        if why:
            lines.append(
                f"agent {spec.name}: the model provider at {spec.base_url} {why} "
                f"(checked with {key_name} before any machine; --llm-base-url names another)"
            )
    return lines
