"""``-k`` expressions over test ids, as in pytest: words match as case-insensitive substrings,
combined with ``and``, ``or``, ``not`` and parentheses (``matmul and not f16``)."""

from __future__ import annotations

import re
from collections.abc import Callable

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class ExpressionError(ValueError):
    pass


def matcher(expr: str) -> Callable[[str], bool]:
    """A predicate on test ids for ``expr``; :class:`ExpressionError` names what is wrong."""
    tokens = _TOKEN.findall(expr)
    if "".join(tokens) != "".join(expr.split()):
        raise ExpressionError(f"-k {expr!r}: cannot read it")
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return str(tokens[pos - 1])

    def parse_or() -> Callable[[str], bool]:
        left = parse_and()
        while peek() == "or":
            take()
            left = _either(left, parse_and())
        return left

    def parse_and() -> Callable[[str], bool]:
        left = parse_not()
        while peek() == "and":
            take()
            left = _both(left, parse_not())
        return left

    def parse_not() -> Callable[[str], bool]:
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda s: not inner(s)
        return parse_atom()

    def parse_atom() -> Callable[[str], bool]:
        tok = peek()
        if tok is None:
            raise ExpressionError(f"-k {expr!r}: ends where a word was expected")
        take()
        if tok == "(":
            inner = parse_or()
            if peek() != ")":
                raise ExpressionError(f"-k {expr!r}: a '(' is not closed")
            take()
            return inner
        if tok in (")", "and", "or"):
            raise ExpressionError(f"-k {expr!r}: unexpected {tok!r}")
        word = tok.lower()
        return lambda s: word in s.lower()

    if not tokens:
        return lambda s: True
    result = parse_or()
    if pos != len(tokens):
        raise ExpressionError(f"-k {expr!r}: unexpected {tokens[pos]!r}")
    return result


def _either(a: Callable[[str], bool], b: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda s: a(s) or b(s)


def _both(a: Callable[[str], bool], b: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda s: a(s) and b(s)
