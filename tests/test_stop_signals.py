"""A stop signal takes the Ctrl-C path of every command (tests/test_run_pipeline.py sends SIGTERM
to a real run mid-agent); here, what the handler does with the signals around it."""

import os
import signal

import pytest

from deploybench.run.signals import Stopped, as_interrupt


@pytest.fixture
def restore_signals():
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_is_raised_once_then_ignored_during_clean_up(sig, restore_signals):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    with pytest.raises(Stopped) as stopped, as_interrupt():
        try:
            os.kill(os.getpid(), sig)
        finally:
            # Clean-up runs here, in the runner: a second signal must not cut it short.
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGTERM)
    assert stopped.value.signum == sig
    assert isinstance(stopped.value, KeyboardInterrupt)  # every Ctrl-C path takes it
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_signal_the_controller_was_started_ignoring_stays_ignored(restore_signals):
    # `nohup deploybench run ...`: a closed terminal must not stop the run.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with as_interrupt():
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)
        assert callable(signal.getsignal(signal.SIGTERM))
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
