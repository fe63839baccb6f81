"""The one exception type the CLI turns into a single clear line and a non-zero exit."""


class DeployBenchError(Exception):
    """A problem the user can act on; its message is printed as one line, no traceback."""

    exit_code = 2


class InfraError(DeployBenchError):
    """The infrastructure failed (machine did not come up, SSH lost, provider error).

    Never counted against an agent: the runner records it as `infra_error` and retries."""

    exit_code = 3
