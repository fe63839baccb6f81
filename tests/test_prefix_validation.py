"""validate-references --until-blocked (deploybench/attempt/prefix.py): a role runs on a machine
without a GPU until a step this machine cannot take, and the task file records how far it got.
The end-to-end test runs the legacycalc demo's real role, with one step put in its way each time
(the shared gpu_driver role, a download from a host that cannot resolve, a make target that
does not exist, a step longer than its limit), on real local machines, from a checkout of its
own (DEPLOYBENCH_REPO, a git repository so the harness commit is known)."""

import socket
import subprocess
import threading

import pytest
import yaml

from deploybench.attempt import prefix
from tests.conftest import own_checkout, run_cli

TASK = "legacycalc_demo24"
# A host that never resolves (RFC 2606's .invalid): a step reaching for it is blocked here
# and everywhere, so the test does not hang on what this host's network reaches today.
NOWHERE = "https://deploybench-prefix-test.invalid/data.tar.gz"


def _event(kind, task, role=TASK, path=f"/x/reference_setups/{TASK}/tasks/main.yml:7", **res):
    return {
        "event": kind,
        "event_data": {"task": task, "role": role, "task_path": path, "res": res},
    }


def test_the_window_is_the_role_and_its_shared_roles_and_ends_at_the_harness():
    events = [
        _event("runner_on_ok", "Note when the reference setup starts", role="agent_launch"),
        _event("runner_on_ok", "Check the tree"),
        _event("runner_on_ok", "Look for an NVIDIA GPU", role="gpu_driver"),
        _event(
            "runner_on_failed",
            "Refuse a machine without an NVIDIA GPU",
            role="gpu_driver",
            path="/r/roles/gpu_driver/tasks/main.yml:25",
            msg="this task runs on the GPU and this machine has no NVIDIA GPU",
        ),
        _event("runner_on_ok", "Record that the reference setup failed", role="agent_reference"),
        _event("runner_on_failed", "a harness step after it", role="agent_launch", msg="x"),
    ]
    got = prefix.summarize(events, TASK)
    assert got["steps_ok"] == 2
    assert got["last_ok"]["name"] == "Look for an NVIDIA GPU"
    assert got["stopped_by"] == "gpu"
    assert got["stopped_at"]["path"] == "gpu_driver/tasks/main.yml:25"


def test_a_role_argument_check_is_placed_in_its_playbook_not_the_checkout():
    # A role's argument spec is checked by a task Ansible places at the playbook's include line,
    # whose path is the checkout's: the task file must not record where the harness was cloned.
    events = [
        _event(
            "runner_on_failed",
            "Validating arguments against arg spec 'main'",
            path="/work/some-clone/playbooks/run_task.yml:10",
            msg="missing required arguments: demo_data_url",
        )
    ]
    got = prefix.summarize(events, TASK)
    assert got["stopped_at"]["path"] == "playbooks/run_task.yml:10"


def test_an_ignored_error_is_not_where_it_stopped_and_a_clean_run_is_none():
    events = [
        _event("runner_on_ok", "one"),
        {**_event("runner_on_failed", "probe", msg="no such file"), "event_data": {
            "task": "probe", "role": TASK, "ignore_errors": True, "res": {"msg": "no"}}},
        _event("runner_on_ok", "two"),
    ]  # fmt: skip
    got = prefix.summarize(events, TASK)
    assert got == {
        "role": TASK,
        "steps_ok": 2,
        "last_ok": {"name": "two", "role": TASK, "path": f"{TASK}/tasks/main.yml:7"},
        "stopped_by": "none",
        "why": "the role ran to its end",
    }


@pytest.mark.parametrize(
    ("said", "command", "kind"),
    [
        ("AssertionError\nassert torch.cuda.is_available()", "env/bin/python -c ...", "gpu"),
        ("Task failed: Timed out after 15 second(s).", "sleep 120", "budget"),
        ("The command action failed to execute in the expected time frame (5)", "make", "budget"),
        ("No package matching 'python2' is available", "", "image"),
        (
            "failed to fetch PPA information, error was: Request failed",
            "ppa:deadsnakes/ppa",
            "image",
        ),
        (
            "Validation of arguments failed:\nmissing required arguments: dml_cvpr18_url",
            "",
            "input",
        ),
        ("E: Sub-process /usr/bin/dpkg returned an error code (1)", "apt", "defect"),
        # opam's words when curl could not resolve its repository's host (pash_eurosys21).
        (
            'Curl failed: "/usr/bin/curl -L -o i.tar.gz -- https://opam.ocaml.org/index.tar.gz"'
            " exited with code 6\n[ERROR] Initial download of repository failed.",
            "opam init",
            "host",
        ),
        ("make: *** No rule to make target 'nope'.  Stop.", "make nope", "defect"),
    ],
)
def test_why_a_step_stopped(said, command, kind):
    # As on a machine that reaches none of the hosts named (the next test tries real ones).
    step = {"name": "s", "said": said, "command": command}
    assert prefix.why_stopped(step, probe=lambda host: False)[0] == kind


def test_a_network_error_is_a_host_block_only_when_the_host_is_unreachable_now():
    # A listening socket on loopback is reachable; an .invalid name never resolves.
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    threading.Thread(target=lambda: server.accept(), daemon=True).start()
    try:
        assert prefix.reachable("127.0.0.1", port=port)
        assert not prefix.reachable("deploybench-prefix-test.invalid", port=port)
        step = {
            "name": "Download the data",
            "said": "Request failed: <urlopen error [Errno -2] Name or service not known>",
            "command": NOWHERE,
        }
        kind, why = prefix.why_stopped(step)
        assert kind == "host" and why.startswith("deploybench-prefix-test.invalid cannot be")
        # The same words about a host that answers: the role's own fault, not a block.
        step["command"] = f"http://127.0.0.1:{port}/data"
        assert prefix.why_stopped(step, probe=lambda h: prefix.reachable(h, port=port))[0] == (
            "defect"
        )
    finally:
        server.close()


def test_a_long_output_is_judged_whole_and_kept_by_its_end():
    # kaldi's tools build: wget's refusal is in the middle, the URL at the top, MKL's warning
    # at the end; the step is a host block (judged on all of it), its kept text the end.
    said = "non-zero return code\nwget: unable to resolve host address 'github.com'\n"
    said += "make: *** [Makefile:196: cub-1.8.0.tar.gz] Error 4\n" + "x" * 2000
    url = "https://github.com/NVlabs/cub/archive/1.8.0.tar.gz"
    events = [_event("runner_on_failed", "Build the tools", msg="non-zero return code",
                     stderr=said[21:], stdout=f"wget {url}")]  # fmt: skip
    got = prefix.summarize(events, TASK)
    assert got["stopped_by"] == "host", got
    assert got["why"] == (
        "github.com cannot be reached from here: wget: unable to resolve host address 'github.com'"
    )
    assert len(got["stopped_at"]["said"]) == 600


def test_hosts_named_reads_urls_and_git_addresses():
    text = "git clone git@github.com:a/b.git; curl https://huggingface.co/x https://github.com/y"
    assert prefix.hosts_named(text) == ["huggingface.co", "github.com"]


def test_the_host_a_tool_names_comes_before_a_stack_frames_url():
    # raco's refusal (jitterbug_osdi20): the stack names a function as http://getpost-impure-port.
    said = (
        "tcp-connect: host not found\n  hostname: github.com\n  port number: 443\n"
        "   /usr/share/racket/collects/net/url.rkt:202:0: http://getpost-impure-port\n"
        "Querying Git references for rosette at https://github.com/emina/rosette.git#c092b65"
    )
    assert prefix.hosts_named(said) == ["github.com"]
    kind, why = prefix.why_stopped({"name": "raco", "said": said}, probe=lambda host: False)
    assert (kind, why) == (
        "host",
        "github.com cannot be reached from here: tcp-connect: host not found",
    )


# ---- end to end, real machines ------------------------------------------------------------
BLOCKS = {
    "gpu": """- name: Install the GPU driver
  ansible.builtin.include_role:
    name: gpu_driver
""",
    "host": f"""- name: Download the test data
  ansible.builtin.get_url:
    url: {NOWHERE}
    dest: /tmp/data.tar.gz
    mode: "0644"
    timeout: 10
""",
    "defect": """- name: Build a target the Makefile does not have
  ansible.builtin.command:
    cmd: make no-such-target
    chdir: "{{ legacycalc_demo24_workdir }}"
  changed_when: false
""",
    "budget": """- name: Wait longer than a step may
  ansible.builtin.command:
    cmd: sleep 120
  changed_when: false
""",
}
STOPPED_AT = {
    "gpu": "Refuse a machine without an NVIDIA GPU (the task runs on the GPU) "
    "(gpu_driver/tasks/main.yml:",
    "host": f"Download the test data ({TASK}/tasks/main.yml:",
    "defect": f"Build a target the Makefile does not have ({TASK}/tasks/main.yml:",
    "budget": f"Wait longer than a step may ({TASK}/tasks/main.yml:",
}
# The last step before the inserted one: the role's own assert, or gpu_driver's last look.
LAST_OK = {
    "gpu": "Note whether there is one (gpu_driver/tasks/main.yml:",
    "host": f"Assert the workdir holds the legacycalc sources ({TASK}/tasks/main.yml:",
}
LAST_OK["defect"] = LAST_OK["budget"] = LAST_OK["host"]


@pytest.fixture
def checkout(tmp_path):
    """A git checkout of its own: the harness's playbooks and roles as they are, the legacycalc
    demo's task, role and verifier copied so that a test can put a step in the role's way."""
    return own_checkout(tmp_path, TASK)


def _put_in_the_way(root, block):
    role = root / "reference_setups" / TASK / "tasks" / "main.yml"
    text = role.read_text()
    anchor = "- name: Install the C++ toolchain"
    assert anchor in text
    role.write_text(text.replace(anchor, block + "\n" + anchor, 1))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpu", "host", "defect", "budget"])
def test_until_blocked_records_how_far_the_role_got(root_host, runs, checkout, kind):
    _put_in_the_way(checkout, BLOCKS[kind])
    env = {"DEPLOYBENCH_REPO": str(checkout)}
    head = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    # 15 s a step for the step that sleeps; the others keep the default (apt may be slow).
    limit = ["--step-minutes", "0.25"] if kind == "budget" else []
    proc = run_cli(
        "validate-references", "--until-blocked", "--tasks", TASK, *limit,
        env=env, cwd=checkout, check=False, timeout=900,
    )  # fmt: skip
    print(proc.stdout, proc.stderr)
    # Blocked (gpu, host, budget): done, exit 0; a defect of the role's own fails the command.
    assert (proc.returncode != 0) == (kind == "defect"), proc.stderr
    record = yaml.safe_load((checkout / "tasks" / TASK / "task.yaml").read_text())
    got = record["prefix_validation"]
    print(got)
    assert got["stopped_by"] == kind
    assert got["stopped_at"].startswith(STOPPED_AT[kind])
    assert got["last_ok"].startswith(LAST_OK[kind])
    assert got["steps_ok"] >= 4
    # The role's file changed after the commit: the record says so.
    assert got["harness_commit"] == head[:12] + "+dirty"
    assert got["backend"] == "local" and got["image"] == "debian12"
    assert record["validated"] is None
    if kind == "host":
        assert got["why"].startswith("deploybench-prefix-test.invalid cannot be reached")
    shown = run_cli("tasks", "list", "--long", env=env, cwd=checkout).stdout
    assert kind in shown and str(got["steps_ok"]) in shown
    assert (
        "1 task(s) valid"
        in run_cli("tasks", "validate", f"tasks/{TASK}", env=env, cwd=checkout).stdout
    )


@pytest.mark.slow
def test_until_blocked_on_a_role_that_passes_validates_it(root_host, runs, checkout):
    env = {"DEPLOYBENCH_REPO": str(checkout)}
    run_cli(
        "validate-references", "--until-blocked", "--tasks", TASK, env=env, cwd=checkout,
        timeout=900,
    )  # fmt: skip
    record = yaml.safe_load((checkout / "tasks" / TASK / "task.yaml").read_text())
    got = record["prefix_validation"]
    assert got["stopped_by"] == "none" and "stopped_at" not in got
    assert got["why"] == "the reference setup passed its verifier"
    assert got["harness_commit"].endswith("+dirty") is False
    assert record["validated"]["run_id"] == got["run_id"]


def test_what_a_machine_said_is_shown_as_it_is_not_as_markup(tmp_path):
    # A build log's "[error]" or "[/]" would be eaten (or raise) as rich markup in the tables.
    from rich.console import Console

    from deploybench.commands.tasks import _prefix_cells

    said = "make: *** [error] no rule [/] to make target"
    record = {"steps_ok": 3, "stopped_at": "Build [bold] it (r/tasks/main.yml:4)", "why": said}
    record |= {"stopped_by": "defect", "at": "2026-12-05T00:00:00Z", "harness_commit": "abc"}
    cells = _prefix_cells(record)
    console = Console(width=300, record=True)
    for cell in cells:
        console.print(cell)
    shown = console.export_text()
    assert said in shown and "Build [bold] it" in shown
