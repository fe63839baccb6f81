"""Split a shell command into sub-commands on the top-level `&&`, `||`, `;` and newlines.

A sub-command is what sits between those separators when they are not inside quotes, `$( )`,
backticks, `( )` subshells, `{ }` groups, `for/while/if` bodies or heredoc bodies. A pipeline
(`a | b`) is ONE sub-command: pipes do not split, and neither does a lone `&` (background).
A heredoc body stays with the sub-command that opens it.

A plain list (no quoting, expansion, grouping, heredoc, escape, comment or keyword) is cut at
its separators directly, and so is one whose only extras are quoted words without expansions
(`'...'`, `"..."` holding no `$`, backtick or backslash) and one heredoc whose body ends the
command. Otherwise bashlex parses most of bash and is used first; it rejects some real input
(e.g. `&&` inside `$( )` in 0.18), and then our own small tokenizer below gives the split. All
of them are tested on the same cases. Results are cached: agents repeat the same commands many
times. bashlex is imported on its first parse (bashlex_cached: its tables from a cache)."""

from __future__ import annotations

import re
from functools import lru_cache

from deploybench.analysis.bashlex_cached import import_bashlex

SPLIT_OPERATORS = {"&&", "||", ";"}
# Nothing to split when none of these appear: the fast path for most commands.
_SPECIAL = re.compile(r"[;&|\n]")
# A plain list: no quote, expansion, subshell, group, test bracket, heredoc or input redirect,
# escape, comment, `;;` or compound-command keyword. Its separators are all top-level, so
# cutting at them gives bashlex's split without a parse (the report's dearest step per command).
_NOT_PLAIN = re.compile(
    r"""['"`$(){}\[\]<\\#\r]|;;"""
    r"|\b(?:for|while|until|select|if|then|elif|else|fi|case|esac|do|done|function)\b"
)
_SEPARATOR = re.compile(r"&&|\|\||;|\n")
# Quoted words that split nothing and expand nothing: masked out before the plain test.
_QUOTED = re.compile(r"'[^']*'|\"[^\"$`\\]*\"")


@lru_cache(maxsize=200_000)
def split_subcommands(command: str | None) -> tuple[str, ...]:
    """The sub-commands of one shell command, stripped, in order (a tuple: it is cached)."""
    if not command or not command.strip():
        return ()
    text = command.strip()
    if not _SPECIAL.search(text):
        return (text,)
    if not _NOT_PLAIN.search(text):
        return tuple(split_plain(text)) or (text,)
    quoted = split_quoted(text)
    if quoted is not None:
        return tuple(quoted) or (text,)
    try:
        parts = _split_bashlex(text)
    except Exception:  # bashlex raises several types (ParsingError, NotImplementedError, ...)
        parts = split_fallback(text)
    # A comment-only line is still something the agent sent; keep it as one sub-command.
    return tuple(parts) if parts else (text,)


def split_plain(text: str) -> list[str]:
    """The split of a plain list (see _NOT_PLAIN): at every `&&`, `||`, `;` and newline."""
    return [p.strip() for p in _SEPARATOR.split(text) if p.strip()]


def _mask(match: re.Match[str]) -> str:
    return "_" * len(match.group())  # same length: positions in the mask are the text's


def split_quoted(text: str) -> list[str] | None:
    """The split of a plain list with quoted words and at most one heredoc, the heredoc's body
    being the rest of the command; None for anything else (bashlex decides then). The quoted
    words are masked, the heredoc operator blanked, and what is left must be a plain list: its
    separators are then exactly the top-level ones, and a heredoc body, after the last of them,
    stays with the last sub-command, as bashlex's split leaves it."""
    head, body = text, None
    start = text.find("<<")
    if start >= 0:
        newline = text.find("\n", start)
        if newline < 0 or "\n" in text[:start]:
            return None
        head, body = text[:newline], text[newline + 1 :]
    masked = _QUOTED.sub(_mask, head)
    if body is not None:
        operator = _HEREDOC.match(head, start)
        if not operator or masked[start : start + 2] != "<<" or operator.group(1):
            return None  # `<<` in quotes, `<<<`, `<<-` (tab stripping): not this path
        lines = body.split("\n")
        delimiter = operator.group(3)
        if lines[-1] != delimiter or delimiter in lines[:-1]:
            return None  # the body must end the command, on its delimiter line
        if not operator.group(2) and any(c in body for c in "$`\\"):
            return None  # an unquoted delimiter expands the body: leave it to bashlex
        masked = masked[:start] + " " * (operator.end() - start) + masked[operator.end() :]
    if _NOT_PLAIN.search(masked):
        return None
    cuts = [m.span() for m in _SEPARATOR.finditer(masked)]
    return _pieces(text, cuts)


def _split_bashlex(text: str) -> list[str]:
    cuts: list[tuple[int, int]] = []  # spans of separators, in text order
    nodes = import_bashlex().parse(text)
    for node in nodes:
        if node.kind == "list":
            for part in node.parts:
                if part.kind == "operator" and part.op in SPLIT_OPERATORS:
                    cuts.append(tuple(part.pos))
    # Top-level nodes are separated by newlines; the gap between two of them holds any
    # heredoc body of the first, so the cut is placed at the start of the next node.
    for node in nodes[1:]:
        cuts.append((node.pos[0], node.pos[0]))
    return _pieces(text, sorted(cuts))


def _pieces(text: str, cuts: list[tuple[int, int]]) -> list[str]:
    out, start = [], 0
    for begin, end in cuts:
        out.append(text[start:begin])
        start = end
    out.append(text[start:])
    return [p.strip() for p in out if p.strip()]


_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_OPENERS = {"for", "while", "until", "if", "case", "select"}
_CLOSERS = {"done": ("for", "while", "until", "select"), "fi": ("if",), "esac": ("case",)}


def split_fallback(text: str) -> list[str]:
    """Our own tokenizer: one pass over the characters with a stack of open constructs."""
    cuts: list[tuple[int, int]] = []
    stack: list[str] = []  # open constructs: "'", '"', "$(", "(", "`", "{", and keywords
    pending_heredocs: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    word_start = True  # at the start of a word (keywords and comments only count there)
    while i < n:
        c = text[i]
        top = stack[-1] if stack else None
        if top == "'":
            if c == "'":
                stack.pop()
            i += 1
            continue
        if c == "\\":
            i += 2
            word_start = False
            continue
        if top == '"':
            if c == '"':
                stack.pop()
            elif text.startswith("$(", i):
                stack.append("$(")
                i += 1
            elif c == "`":
                stack.append("`")
            i += 1
            continue
        if top == "`":
            if c == "`":
                stack.pop()
            i += 1
            continue
        if c == "#" and word_start:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in "'\"`":
            stack.append(c)
            i += 1
            word_start = False
            continue
        if text.startswith("$(", i):
            stack.append("$(")
            i += 2
            word_start = True
            continue
        if c == "(":
            stack.append("(")
            i += 1
            word_start = True
            continue
        if c == ")":
            if stack and stack[-1] in ("(", "$("):
                stack.pop()
            i += 1
            word_start = False
            continue
        if c == "{" and word_start and i + 1 < n and text[i + 1].isspace():
            stack.append("{")
            i += 1
            continue
        if c == "}" and word_start and stack and stack[-1] == "{":
            stack.pop()
            i += 1
            word_start = False
            continue
        if text.startswith("<<", i) and not text.startswith("<<<", i):
            match = _HEREDOC.match(text, i)
            if match:
                pending_heredocs.append((match.group(3), match.group(1) == "-"))
                i = match.end()
                word_start = False
                continue
        if c == "\n" and pending_heredocs:
            # Skip every pending heredoc body; its lines never split anything.
            i = _skip_heredocs(text, i + 1, pending_heredocs)
            pending_heredocs = []
            if not stack:
                cuts.append((i, i))
            word_start = True
            continue
        if word_start and (c.isalpha()):
            match = re.match(r"[A-Za-z]+", text[i:])
            word = match.group(0)
            after = i + len(word)
            if after >= n or text[after] in " \t\n;&|)":
                if word in _OPENERS:
                    stack.append(word)
                elif word in _CLOSERS and stack and stack[-1] in _CLOSERS[word]:
                    stack.pop()
            i = after
            word_start = False
            continue
        if not stack:
            two = text[i : i + 2]
            if two in ("&&", "||"):
                cuts.append((i, i + 2))
                i += 2
                word_start = True
                continue
            if c == ";" and two != ";;":
                cuts.append((i, i + 1))
                i += 1
                word_start = True
                continue
            if c == "\n":
                cuts.append((i, i + 1))
                i += 1
                word_start = True
                continue
        word_start = c in " \t\n;&|("
        i += 1
    return _pieces(text, cuts)


def _skip_heredocs(text: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    for delimiter, strip_tabs in heredocs:
        while i < len(text):
            end = text.find("\n", i)
            line = text[i:] if end < 0 else text[i:end]
            i = len(text) if end < 0 else end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return i
