"""Verifiers that cannot be faked cheaply, swept over every catalog task (issue 29, item 5).
Each test is parametrized by the catalog's task ids (tasks/*/task.yaml without `demo`), never
by a list of its own: a new task is in the sweep the day it is added, and fails here until its
verifier meets it or its checks.yaml says why it cannot (`hidden_inputs` ... `not_load_bearing`).

- (a) the entry point stubbed: the task's fake that stands where the experiment's entry point
  is and prints the documented output (tests/test_verifier_fakes.py's entry_stub) is built on
  this host, the task's real machine side runs on it, and its real checks must fail it on a
  check that is not GPU evidence and says it defeats that fake.
- (b) every hidden input load-bearing: see test_hidden_input_is_load_bearing.
- (c) the repository diff judged: see test_a_changed_experiment_file_fails."""

import pytest

from deploybench import catalog
from tests.test_verifier_fakes import entry_stub, play

CATALOG = sorted(catalog.catalog_tasks(catalog.load_tasks()))


def test_the_sweep_is_the_whole_catalog():
    assert len(CATALOG) == 51


@pytest.mark.parametrize("task_id", CATALOG)
def test_a_stub_at_the_entry_point_fails(task_id, tmp_path):
    fake = entry_stub(task_id)
    assert fake, f"{task_id}: no fake at its entry point (tests/fakes*.py: constant or stub_binary)"
    play(task_id, fake, tmp_path)
