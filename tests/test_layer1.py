"""Layer 1 rules (verifiers/global/rules.yaml): every rule has a line it must match and one it
must not; categories, priorities, evidence, verdicts and the contract-3 mapping."""

import pytest

from deploybench import contracts
from deploybench.errors import DeployBenchError
from deploybench.verify import verification

RULES = verification.load_rules()

# rule id -> (a line it must match, a line it must not match)
CASES = {
    "cuda_oom": (
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "CUDA memory in use: 1.2 GiB of 24 GiB",
    ),
    "python_memory_error": ("MemoryError", "no MemoryErrors seen"),
    "oom_killer": (
        "bash: line 1:  4242 Killed                  python train.py",
        "Killed 3 stale workers before the run (cleanup step)",
    ),
    "bad_alloc": (
        "terminate called after throwing an instance of 'std::bad_alloc'",
        "allocations: 12 (bad_alloc handler installed)",
    ),
    "python_module_missing": (
        "ModuleNotFoundError: No module named 'torch'",
        "loaded module numpy from env/lib/python3.11",
    ),
    "python_import_error": (
        "ImportError: cannot import name 'url_quote' from 'werkzeug.urls'",
        "checking imports: ok",
    ),
    "python_api_removed": (
        "AttributeError: module 'numpy' has no attribute 'float'.",
        "AttributeError: 'NoneType' object has no attribute 'shape'",
    ),
    "shared_library_missing": (
        "./bin: error while loading shared libraries: libssl.so.1.0.0: cannot open shared object",
        "linked against libssl.so.3 (found)",
    ),
    "command_not_found": (
        "bash: line 1: make: command not found",
        "the command was found in /usr/bin",
    ),
    "pip_no_distribution": (
        "ERROR: No matching distribution found for torch==1.9.1+cu111",
        "Found existing installation: numpy 1.23.5",
    ),
    "pip_resolution": (
        "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io",
        "Resolved 12 packages in 30ms",
    ),
    "cuda_driver_missing": (
        "RuntimeError: Found no NVIDIA driver on your system.",
        "NVIDIA driver 550.54 loaded",
    ),
    "compiler_command_failed": (
        "error: command 'gcc' failed with exit code 1",
        "gcc -O2 -c foo.c -o foo.o",
    ),
    "missing_header": (
        "src/main.c:3:10: fatal error: openssl/ssl.h: No such file or directory",
        "#include <openssl/ssl.h>",
    ),
    "compiler_error": (
        "src/rpn.h:21:46: error: ISO C++17 does not allow dynamic exception specifications",
        "Build finished: 0 errors, 2 warnings",
    ),
    "undefined_reference": (
        "main.cpp:(.text+0x1c): undefined reference to `foo()'",
        "all references resolved",
    ),
    "make_error": (
        "make: *** [Makefile:14: src/main.o] Error 1",
        "make: Nothing to be done for 'all'.",
    ),
    "cmake_error": (
        "CMake Error at CMakeLists.txt:12 (find_package):",
        "-- Configuring done (CMake 3.25)",
    ),
    "segfault": ("Segmentation fault (core dumped)", "no segmentation faults in 10 runs"),
    "core_dumped": ("Aborted (core dumped)", "core count: 16"),
    "python_traceback": (
        "Traceback (most recent call last):",
        "  traceback printing is disabled (PYTHONFAULTHANDLER=0)",
    ),
    "cuda_runtime_error": (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "CUDA runtime 12.1 initialised",
    ),
}

# Lines a passing run prints: none of them may fail Layer 1.
CLEAN = [
    "0 errors",
    'Build finished: 0 errors, 0 warnings, "error": null',
    '{"error": "not found"}',
    '127.0.0.1 - - [29/Nov/2026 07:35:05] "GET /kv/zz HTTP/1.1" 404 -',
    "WARNING: This is a development server. Do not use it in a production deployment.",
    "/w/train.py:21: DeprecationWarning: `np.float` is a deprecated alias for the builtin `float`.",
    "9 invalid: division by zero",
    "legacycalc: 11 lines read, 4 invalid formulas",
    "epoch 1  loss 0.1195  accuracy 1.000",
    "exit code: 0",
    "Successfully installed numpy-1.23.5",
]


def test_every_rule_has_a_case():
    assert {r.id for r in RULES} == set(CASES)


def test_rules_are_data_with_known_categories():
    for rule in RULES:
        assert rule.category in verification.CATEGORIES
        assert rule.explanation


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_matches_its_line_and_not_the_other(rule_id):
    must, must_not = CASES[rule_id]
    matched = verification.match_line(must, RULES)
    assert matched is not None and matched.id == rule_id, (rule_id, matched)
    rule = next(r for r in RULES if r.id == rule_id)
    assert not rule.pattern.search(must_not)
    result = verification.layer1([must_not])
    assert result["category"] != rule.category or result["passed"] is False


@pytest.mark.parametrize("line", CLEAN)
def test_clean_lines_pass(line):
    assert verification.layer1([line]) == {"passed": True, "category": None, "evidence": []}


def test_zero_errors_is_not_compilation():
    assert verification.layer1(["Build finished: 0 errors"])["passed"] is True


def test_traceback_ending_in_missing_module_is_dependency():
    log = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    import torch\n"
        "ModuleNotFoundError: No module named 'torch'\n"
    )
    result = verification.layer1({"02_experiment.log": log})
    assert result["passed"] is False
    assert result["category"] == "dependency"
    assert result["evidence"][0] == (
        "02_experiment.log:4: ModuleNotFoundError: No module named 'torch'"
    )
    assert "02_experiment.log:1: Traceback (most recent call last):" in result["evidence"]


def test_plain_crash_is_runtime_crash():
    log = "Traceback (most recent call last):\nZeroDivisionError: division by zero\n"
    assert verification.layer1([log])["category"] == "runtime_crash"


def test_memory_error_traceback_is_oom():
    log = "Traceback (most recent call last):\nMemoryError\n"
    assert verification.layer1([log])["category"] == "oom"


def test_compiler_errors_are_compilation():
    log = (
        "g++ -O2 -Wall -c -o src/main.o src/main.cpp\n"
        "src/rpn.h:21:46: error: ISO C++17 does not allow dynamic exception specifications\n"
        "make: *** [Makefile:14: src/main.o] Error 1\n"
    )
    result = verification.layer1({"02_build.log": log})
    assert result["category"] == "compilation"
    assert len(result["evidence"]) == 2


def test_evidence_is_capped():
    result = verification.layer1(
        ["".join(f"Segmentation fault in worker {i}\n" for i in range(50))]
    )
    assert len(result["evidence"]) == verification.MAX_EVIDENCE


def test_build_verdict_needs_both_layers():
    ok1 = {"passed": True, "category": None, "evidence": []}
    bad1 = {"passed": False, "category": "oom", "evidence": ["Killed"]}
    ok2 = [{"name": "a", "passed": True, "detail": ""}]
    bad2 = [
        {"name": "a", "passed": True, "detail": ""},
        {"name": "b", "passed": False, "detail": "x"},
    ]
    assert verification.build_verdict(ok1, ok2, 1.5)["passed"] is True
    assert verification.build_verdict(bad1, ok2, 1)["passed"] is False
    assert verification.build_verdict(ok1, bad2, 1)["passed"] is False
    missing = verification.build_verdict(ok1, None, 1)
    assert missing["passed"] is False and missing["layer2"]["checks"][0]["name"] == "checks_judged"
    assert verification.build_verdict(ok1, [], 1)["layer2"]["passed"] is False
    contracts.check(contracts.VERDICT, verification.build_verdict(bad1, bad2, 2), "verdict")


def test_build_verdict_rejects_bad_checks():
    with pytest.raises(DeployBenchError, match="verdict.json: field layer2/checks/0/passed"):
        verification.build_verdict(
            {"passed": True, "category": None, "evidence": []},
            [{"name": "a", "passed": "yes", "detail": ""}],
            1,
        )


def test_failure_of_maps_to_contract_3():
    ok = {"passed": True, "category": None, "evidence": []}
    checks_ok = [{"name": "a", "passed": True, "detail": ""}]
    checks_bad = [{"name": "a", "passed": False, "detail": ""}]
    passed = verification.build_verdict(ok, checks_ok, 1)
    l1 = verification.build_verdict(
        {"passed": False, "category": "compilation", "evidence": ["e"]}, checks_bad, 1
    )
    l2 = verification.build_verdict(ok, checks_bad, 1)
    assert verification.failure_of(passed, False) == (None, None)
    assert verification.failure_of(l1, False) == (1, "compilation")
    assert verification.failure_of(l2, False) == (2, "task_check")
    assert verification.failure_of(l2, True) == (2, "verifier_timeout")
    assert verification.failure_of(None, True) == (2, "verifier_timeout")
    for category in ("tampered", "machine_broken"):
        machine = {"passed": False, "category": category, "evidence": ["x"]}
        # A machine that failed its integrity judgment fails at layer 0, whatever else holds.
        verdict = verification.build_verdict(ok, checks_ok, 1, machine)
        assert verdict["passed"] is False
        assert verification.failure_of(verdict, True) == (0, category)
    enum = contracts.RESULT["properties"]["failure_category"]["enum"]
    for category in (*verification.CATEGORIES, "tampered", "machine_broken"):
        assert category in enum


def test_verdict_from_logs(tmp_path):
    (tmp_path / "01_run.log").write_text("epoch 1 loss 0.1\n")
    (tmp_path / "run.rc").write_text("0\n")
    spec = [{"name": "m", "kind": "value", "file": "run.rc", "pattern": "^(\\d+)$", "equals": 0}]
    verdict = verification.verdict_from_logs(tmp_path, 3.0, spec)
    assert verdict["passed"] is True
    timed_out = verification.verdict_from_logs(tmp_path, 3.0, spec, timed_out=True)
    assert timed_out["passed"] is False
    assert timed_out["layer2"]["checks"][-1]["name"] == "verifier_finished"
    # A checks.json the machine wrote counts for nothing: only the declared checks are judged.
    (tmp_path / "checks.json").write_text('[{"name": "m", "passed": true, "detail": ""}]')
    (tmp_path / "run.rc").write_text("1\n")
    assert verification.verdict_from_logs(tmp_path, 3.0, spec)["layer2"]["passed"] is False
    assert verification.verdict_from_logs(tmp_path, 3.0, None)["layer2"]["passed"] is False


def test_bad_rules_file_is_one_line(tmp_path):
    bad = tmp_path / "rules.yaml"
    bad.write_text("- {id: x, pattern: '(', category: oom, explanation: e}\n")
    with pytest.raises(DeployBenchError, match=r"rule 1 \(x\): field pattern"):
        verification.load_rules(bad)
    bad.write_text("- {id: x, pattern: 'a', category: weird, explanation: e}\n")
    with pytest.raises(DeployBenchError, match="field category"):
        verification.load_rules(bad)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("STATUS: SUCCESS\n# Runbook", "SUCCESS"),
        ("# Runbook\n\nStatus: partial\n", "PARTIAL"),
        ("**STATUS:** FAILED", "FAILED"),
        ("## Status: SUCCESS", "SUCCESS"),
        ("# Runbook\nno status here", None),
        ("", None),
    ],
)
def test_runbook_status(text, status):
    assert verification.runbook_status(text) == status
