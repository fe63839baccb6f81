"""Sub-command splitting: bashlex where it parses, our tokenizer where it does not; both must
give the same split on the cases docs/measurements.md names."""

import bashlex
import pytest

from deploybench.analysis.shell_split import (
    _NOT_PLAIN,
    _split_bashlex,
    split_fallback,
    split_plain,
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
