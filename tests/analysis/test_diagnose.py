"""`deploybench diagnose`: the prompt carries the ground truth, a model on loopback answers, the
root cause maps to patterns by rules; with no model, the rules alone."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from deploybench.analysis.diagnose import map_patterns, parse_answer
from deploybench.analysis.diagnose_run import diagnose_run
from deploybench.commands.report import diagnose
from deploybench.errors import DeployBenchError
from tests.analysis import handmade

SECRET = "sk-test-not-a-real-key-1234"


class ScriptedModel:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script
    and records every request it got."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                answer = owner.answers.pop(0) if owner.answers else '{"root_cause": "unknown"}'
                if isinstance(answer, int):  # a scripted HTTP error
                    self.send_response(answer)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": answer}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hand_run(tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    # a reference setup beside the catalog: the ground truth the prompt must carry
    ref = tmp_path / "reference_setups" / "t2_hand24" / "tasks"
    ref.mkdir(parents=True)
    (ref / "main.yml").write_text("- name: Build sim with -std=gnu99\n  ansible.builtin.make:\n")
    state = run_dir / "t2_hand24" / "alpha" / "1" / "state"
    state.mkdir()
    (state / "git_diff.patch").write_text("--- a/sim.c\n+++ b/sim.c\n")
    return run_dir, catalog


def test_model_diagnosis_on_loopback(hand_run, monkeypatch):
    run_dir, catalog = hand_run
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # failed attempts in results.jsonl order: alpha t2, alpha t3#2, beta t1#1, beta t3
    answers = [
        '```json\n{"root_cause": "sim.c needs -std=gnu99; the gcc build failed", '
        '"evidence": ["error: unknown type name"]}\n```',
        '{"root_cause": "the CUDA driver was never installed, so the GPU run fell back"}',
        '{"root_cause": "numpy was not pinned below 1.24 (version conflict)"}',
        "The QEMU VM ran out of memory.",  # not JSON: the text is the root cause
    ]
    with ScriptedModel(answers) as model:
        result = diagnose_run(run_dir, catalog, "diag-model", model.url)
    assert result.count == 4
    assert [r["path"] for r in model.requests] == ["/v1/chat/completions"] * 4
    assert all(r["auth"] == f"Bearer {SECRET}" for r in model.requests)
    assert model.requests[0]["body"]["model"] == "diag-model"
    prompt = model.requests[0]["body"]["messages"][-1]["content"]
    # ground truth, verifier output and final machine state are in the prompt
    assert "Build sim with -std=gnu99" in prompt
    assert "sim.c:10: error: unknown type name" in prompt
    assert "binary_runs: FAILED: ./bin/sim missing" in prompt
    assert "state/git_diff.patch" in prompt and "+++ b/sim.c" in prompt
    assert "`make`" in prompt  # the agent's last commands

    def read(task, agent, attempt):
        return json.loads((run_dir / task / agent / str(attempt) / "diagnosis.json").read_text())

    first = read("t2_hand24", "alpha", 1)
    assert first["source"] == "model:diag-model"
    assert first["patterns"] == ["native build/toolchain"]
    assert first["evidence"] == ["error: unknown type name"]
    assert read("t3_hand24", "alpha", 2)["patterns"] == ["GPU/CUDA setup"]
    assert read("t1_hand24", "beta", 1)["patterns"] == ["dependency/package/version"]
    assert read("t3_hand24", "beta", 1)["patterns"] == ["system/VM-level execution"]
    # Table 9: all-fail t3 (GPU, system) and mixed t1 (dependency), t2 (native build)
    rows = result.csv.read_text().splitlines()
    assert rows[1].startswith("all-fail tasks,1,0,0,1,0,1,2.0")
    assert rows[2].startswith("mixed-outcome tasks,2,1,1,0,0,0,1.0")
    # the key never reaches the disk
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_rules_alone_read_verifier_output_and_logs(hand_run):
    run_dir, catalog = hand_run
    folder = run_dir / "t3_hand24" / "alpha" / "2"
    (folder / "verifier").mkdir()
    (folder / "verifier" / "verifier_stdout.log").write_text("ok\nRuntimeError: CUDA error\n")
    result = CliRunner().invoke(diagnose, [str(run_dir), "--catalog", str(catalog)])
    assert result.exit_code == 0, result.output
    assert "4 failed attempt(s) diagnosed (rules)" in result.output
    found = json.loads((folder / "diagnosis.json").read_text())
    assert found["source"] == "rules"
    # the verdict: output does not match (artifact); the verifier log: CUDA error (GPU)
    assert found["patterns"] == ["GPU/CUDA setup", "artifact/output mismatch"]
    assert "verifier_stdout.log: RuntimeError: CUDA error" in found["evidence"]
    assert (run_dir / "diagnosis" / "table9_failure_patterns.md").is_file()


def test_report_uses_saved_diagnoses(hand_run):
    from deploybench.analysis.report import compute

    run_dir, catalog = hand_run
    folder = run_dir / "t3_hand24" / "beta" / "1"
    (folder / "diagnosis.json").write_text(json.dumps({"patterns": ["GPU/CUDA setup"]}))
    _, tables = compute([run_dir], catalog)
    table = {t.key: t for t in tables}["9_failure_patterns"].frame
    assert table.loc["all-fail tasks", "GPU/CUDA setup"] == 1
    assert table.loc["all-fail tasks", "system/VM-level execution"] == 0


def test_model_without_url_is_one_clear_error(hand_run):
    run_dir, catalog = hand_run
    with pytest.raises(DeployBenchError, match="--model and --llm-base-url go together"):
        diagnose_run(run_dir, catalog, "m", None)


@pytest.fixture(autouse=True)
def no_retry_wait(monkeypatch):
    monkeypatch.setattr("deploybench.analysis.diagnose.RETRY_SECONDS", 0)


def test_model_server_errors_are_retried_then_reported(hand_run):
    run_dir, catalog = hand_run
    # 503 then an answer: retried; then 400: not retried, one clear error
    with (
        ScriptedModel([503, '{"root_cause": "gcc is missing"}', 400]) as model,
        pytest.raises(DeployBenchError, match=r"answered HTTP 400"),
    ):
        diagnose_run(run_dir, catalog, "m", model.url)
    assert len(model.requests) == 3
    saved = json.loads((run_dir / "t2_hand24" / "alpha" / "1" / "diagnosis.json").read_text())
    assert saved["patterns"] == ["native build/toolchain"]


def test_unreachable_model_server(hand_run):
    run_dir, catalog = hand_run
    with pytest.raises(DeployBenchError, match="not reachable"):
        diagnose_run(run_dir, catalog, "m", "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("text", "patterns"),
    [
        ("ModuleNotFoundError: No module named 'flask'", ["dependency/package/version"]),
        ("undefined reference to `pthread_create' at link time", ["native build/toolchain"]),
        ("nvidia driver missing, CUDA unavailable", ["GPU/CUDA setup"]),
        ("metrics.json does not match the expected accuracy", ["artifact/output mismatch"]),
        ("the service died: address already in use", ["system/VM-level execution"]),
        ("the agent wrote a runbook and stopped", []),
        ("files under /home/vm/Desktop were left", []),  # a user named vm is not a VM
    ],
)
def test_pattern_rules(text, patterns):
    assert map_patterns(text) == patterns


def test_parse_answer():
    assert parse_answer('{"root_cause": "x", "evidence": "y"}') == ("x", ["y"])
    assert parse_answer("plain text") == ("plain text", [])
