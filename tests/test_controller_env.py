"""The controller's environment is never written to disk: a playbook run gets only what it
needs, and the attempt folder holds no value of the rest, also while the playbook runs."""

from __future__ import annotations

import sys
import threading

import pytest

from deploybench.attempt import ansible

LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
UNRELATED = "controllerSecret-not-for-playbooks-3141"
PASSED = "agentKey-passed-on-purpose-2718"


# Over 4 s: the play keeps running (sleep 3) so its folder can be watched meanwhile.
@pytest.mark.slow
def test_a_running_playbook_leaves_no_environment_value_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_PROVIDER_TOKEN", UNRELATED)
    monkeypatch.setenv("AGENT_API_KEY", PASSED)
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- name: Run a while and show what the play sees\n"
        "  hosts: localhost\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - name: Print the variables as the play sees them\n"
        "      ansible.builtin.debug:\n"
        "        msg: \"[{{ lookup('ansible.builtin.env', 'SOME_PROVIDER_TOKEN') }}]"
        "[{{ lookup('ansible.builtin.env', 'AGENT_API_KEY') | length }}]\"\n"
        "    - name: Keep running while the folder is watched\n"
        "      ansible.builtin.command: sleep 3\n"
        "      changed_when: false\n"
    )
    private = tmp_path / "runs" / "r1" / "t" / "nop" / "1" / "ansible"
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for path in private.rglob("*") if private.exists() else []:
                try:
                    data = path.read_bytes() if path.is_file() else b""
                except OSError:
                    continue
                if UNRELATED.encode() in data:
                    seen.append(str(path))
            done.wait(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = ansible.run_playbook(
            playbook, {"all": {"hosts": {"localhost": LOCAL}}}, {}, private,
            pass_env=["AGENT_API_KEY"],
        )  # fmt: skip
    finally:
        done.set()
        watcher.join()
    assert result.ok, result
    assert seen == [], f"the controller's environment was on disk: {sorted(set(seen))}"
    files = [p for p in private.rglob("*") if p.is_file()]
    # The play saw no unrelated variable, and the key it was given (by its length).
    assert any(f"[][{len(PASSED)}]".encode() in p.read_bytes() for p in files)
    for path in files:
        assert PASSED.encode() not in path.read_bytes(), path
        assert UNRELATED.encode() not in path.read_bytes(), path
