"""Sub-command splitting: bashlex where it parses, our tokenizer where it does not; both must
give the same split on the cases docs/measurements.md names."""

import bashlex
import pytest

from deploybench.analysis.shell_split import (
    _NOT_PLAIN,
    _split_bashlex,
    split_fallback,
    split_plain,
    split_quoted,
    split_subcommands,
)

CASES = [
    ("a && b || c; d", ["a", "b", "c", "d"]),
    ('echo "a && b; c" && ls', ['echo "a && b; c"', "ls"]),
    ("echo 'x || y' ; pwd", ["echo 'x || y'", "pwd"]),
    ("x=$(cd src && ls) && echo $x", ["x=$(cd src && ls)", "echo $x"]),
    ('echo "$(a; b)" && c', ['echo "$(a; b)"', "c"]),
    ("echo `a; b` && c", ["echo `a; b`", "c"]),
    ("(cd build && make) && ./run", ["(cd build && make)", "./run"]),
    ("cat a | grep b && wc -l f", ["cat a | grep b", "wc -l f"]),  # a pipeline is one
    ("ps aux | grep x | head -3", ["ps aux | grep x | head -3"]),
    ("cat > f <<EOF\nx && y; z\nEOF\necho done", ["cat > f <<EOF\nx && y; z\nEOF", "echo done"]),
    (
        "cat <<'END' > f.py\nif a || b:\n    pass\nEND",
        ["cat <<'END' > f.py\nif a || b:\n    pass\nEND"],
    ),
    ("for i in 1 2; do echo $i; done && ls", ["for i in 1 2; do echo $i; done", "ls"]),
    ("make -j4\nmake install", ["make -j4", "make install"]),
    ("nohup ./server & sleep 1", ["nohup ./server & sleep 1"]),  # a lone & does not split
    ("ls ;", ["ls"]),
]


@pytest.mark.parametrize(("command", "expected"), CASES)
def test_split(command, expected):
    assert list(split_subcommands(command)) == expected


@pytest.mark.parametrize(("command", "expected"), CASES)
def test_fallback_tokenizer_alone(command, expected):
    assert split_fallback(command) == expected


def test_bashlex_rejects_and_fallback_answers():
    # bashlex 0.18 rejects `&&` inside $( ): the reason the fallback exists.
    command = "v=$(python -c 'import torch' && echo ok) || pip install torch"
    with pytest.raises(bashlex.errors.ParsingError):
        bashlex.parse(command)
    assert list(split_subcommands(command)) == [
        "v=$(python -c 'import torch' && echo ok)",
        "pip install torch",
    ]


def test_empty_and_comment():
    assert split_subcommands("") == ()
    assert split_subcommands("   ") == ()
    assert split_subcommands(None) == ()
    assert split_subcommands("# ansible ansible.builtin.apt: Install") == (
        "# ansible ansible.builtin.apt: Install",
    )


def test_escaped_separator_does_not_split():
    assert split_fallback(r"echo a\;b && c") == [r"echo a\;b", "c"]


PLAIN = [
    "a && b || c; d",
    "git status && git log --oneline | head -5",
    "sudo apt-get update && sudo apt-get install -y cmake",
    "make 2>&1 | tail -3 && ./bin/run > out.log 2>&1",
    "nohup ./server & sleep 1; curl -s localhost:8080/health",
    "cd build && make clean && make",
    "make -j4\nmake install",
    "a &&\n  b",
    "ls ;",
    "uname -a; df -h",
    "env/bin/pip install torch==2.0.1 || env/bin/pip install torch",
]


@pytest.mark.parametrize("command", PLAIN)
def test_plain_lists_split_as_bashlex_does(command):
    # a plain list skips the parse: the same split, by construction, checked here
    assert not _NOT_PLAIN.search(command)
    assert split_plain(command) == _split_bashlex(command) == list(split_subcommands(command))


@pytest.mark.parametrize(("command", "expected"), CASES)
def test_what_is_not_plain_goes_to_the_parser(command, expected):
    # every case above that needs a parser (quotes, $( ), subshells, heredocs, loops) is kept
    # from the plain path, which would cut it wrongly
    if split_plain(command) != expected:
        assert _NOT_PLAIN.search(command)


# Quoted words without expansions and one heredoc ending the command take the fast path; each
# must split as the parser splits it. The last group must be refused (left to the parser).
QUOTED = [
    "find . -name '*.py' | head -20",
    "python -c 'import numpy; print(numpy.__version__)'",
    'echo "a && b; c" && ls',
    "echo 'x || y' ; pwd",
    "grep -rn 'if (x)' src && echo 'for do done'",
    "cat > main.cfg <<'EOF'\n[main]\npath = src; x && y\nEOF",
    "mkdir -p cfg && cat <<EOF > cfg/a.txt\nplain body | with; separators\nEOF",
    "cat <<\"END\" && echo 'ok'\nbody's apostrophe\nEND",
    "x='1 2' && echo \"'\" || echo '\"'",
]
NOT_QUOTED = [
    'echo "$HOME" && ls',  # an expansion inside double quotes
    'printf "a\\\\b" && ls',  # a backslash inside double quotes
    "cat <<EOF && ls\n$x\nEOF",  # an unquoted heredoc body that expands
    "cat <<-EOF\n\tx\nEOF",  # tab-stripping heredoc
    "cat <<EOF\nx\nEOF\necho more",  # the body does not end the command
    "echo '<<' && cat <<EOF\nx\nEOF",  # a `<<` inside quotes before the heredoc
    "echo 'unclosed && ls",
    "echo 'a' && if true; then ls; fi",
]


def _parser_split(command):
    try:
        return _split_bashlex(command)
    except Exception:
        return split_fallback(command)


@pytest.mark.parametrize("command", QUOTED)
def test_quoted_fast_path_splits_as_the_parser_does(command):
    assert _NOT_PLAIN.search(command)  # not the plain path
    fast = split_quoted(command)
    assert fast is not None
    assert fast == _parser_split(command) == list(split_subcommands(command))


@pytest.mark.parametrize("command", NOT_QUOTED)
def test_quoted_fast_path_refuses_what_needs_the_parser(command):
    assert split_quoted(command) is None


def test_quoted_fast_path_agrees_with_the_parser_on_mixed_commands():
    # every pairing of the cases above, joined by each separator: wherever the fast path
    # answers, its answer is the parser's
    answered = 0
    for a in QUOTED + NOT_QUOTED + PLAIN:
        for b in QUOTED + NOT_QUOTED:
            for sep in (" && ", "; ", " | ", "\n"):
                command = (a + sep + b).strip()
                fast = split_quoted(command)
                if fast is not None:
                    answered += 1
                    assert fast == _parser_split(command), command
    assert answered > 100  # the comparison did exercise the fast path


_TABLES = (
    "import json, sys\n"
    "from deploybench.analysis.bashlex_cached import import_bashlex\n"
    "b = import_bashlex()\n"
    "p = b.parser.yaccparser\n"
    "print(json.dumps([sorted((k, sorted(v.items())) for k, v in p.action.items()),"
    " sorted((k, sorted(v.items())) for k, v in p.goto.items()),"
    " [str(n) for n in b.parse('a && b; cat <<EOF\\nx\\nEOF')]]))\n"
)


def _tables(script=_TABLES):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", script], capture_output=True, check=True).stdout


def test_cached_parser_tables_are_bashlex_own(tmp_path, monkeypatch):
    # A fresh interpreter builds the tables and writes the cache, a second reads them; both
    # parse with the tables of a plain `import bashlex`.
    monkeypatch.setenv("DEPLOYBENCH_CACHE", str(tmp_path))
    first = _tables()
    (cached,) = tmp_path.glob("bashlex-lalr-*.marshal")
    second = _tables()
    plain = _tables(_TABLES.replace("b = import_bashlex()", "import bashlex as b"))
    assert first == second == plain
    assert len(first) > 10_000  # the tables really are in the comparison


def test_the_cache_is_read_and_a_broken_one_is_rebuilt(tmp_path, monkeypatch):
    import marshal

    monkeypatch.setenv("DEPLOYBENCH_CACHE", str(tmp_path))
    good = _tables()
    (cached,) = tmp_path.glob("bashlex-lalr-*.marshal")
    # a marked table in the cache is what the parser gets: the cache is really read
    action, goto = marshal.loads(cached.read_bytes())
    action[0]["MARK"] = 12345
    cached.write_bytes(marshal.dumps((action, goto)))
    assert b'["MARK", 12345]' in _tables()
    # an unreadable cache file is rebuilt, and the tables are bashlex's again
    cached.write_bytes(b"not marshal")
    assert _tables() == good
    assert marshal.loads(cached.read_bytes())[0][0].get("MARK") is None
