"""Token prices the user gives (`deploybench report --prices FILE`), for an estimate of the money
an attempt cost. A CSV with one row per model:

    model,input_usd_per_million,output_usd_per_million
    gpt-4o,2.50,10.00

The model is matched exactly against results.jsonl's `model`. Prices change and providers bill
extras (cached input, reasoning tokens), so the report calls the figure an estimate."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from deploybench.errors import DeployBenchError

COLUMNS = ("model", "input_usd_per_million", "output_usd_per_million")


def load(path: Path) -> dict[str, tuple[float, float]]:
    """{model: (USD per million input tokens, USD per million output tokens)}."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DeployBenchError(f"{path}: cannot read the price table: {exc}") from None
    rows = list(csv.DictReader(text.splitlines()))
    if not rows or tuple(rows[0].keys()) != COLUMNS:
        raise DeployBenchError(f"{path}: line 1: the columns must be {','.join(COLUMNS)}")
    prices: dict[str, tuple[float, float]] = {}
    for line, row in enumerate(rows, start=2):
        model = (row["model"] or "").strip()
        try:
            pin, pout = float(row["input_usd_per_million"]), float(row["output_usd_per_million"])
        except (TypeError, ValueError):
            raise DeployBenchError(f"{path}: line {line}: prices must be numbers") from None
        if not model or pin < 0 or pout < 0 or not np.isfinite([pin, pout]).all():
            raise DeployBenchError(f"{path}: line {line}: a model and two prices >= 0")
        if model in prices:
            raise DeployBenchError(f"{path}: line {line}: model {model!r} priced twice")
        prices[model] = (pin, pout)
    return prices


def estimate(attempts: pd.DataFrame, prices: dict[str, tuple[float, float]]) -> pd.Series:
    """USD per attempt from its tokens; NaN where the model has no price."""
    pin = attempts["model"].map(lambda m: prices.get(m, (np.nan, np.nan))[0])
    pout = attempts["model"].map(lambda m: prices.get(m, (np.nan, np.nan))[1])
    return (attempts["tokens_in"] * pin + attempts["tokens_out"] * pout) / 1e6
