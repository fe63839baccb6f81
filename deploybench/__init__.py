"""DeployBench: can an LLM agent take a published research artifact from a bare machine to a
running experiment? This package is the harness: CLI, catalog, backends, runner, analysis."""

__version__ = "0.1.0"
