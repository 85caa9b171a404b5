"""The caller's patterns: regular expressions run by RE2, XPath checked before it runs.

Regular expressions, by RE2: in time linear in the text, whatever the pattern.

Python's ``re`` backtracks: ``(a+)+$`` on 40,000 ``a`` and a ``!`` never ends, and a pattern
runs where it is searched (a regex field of ``json.selectors`` on a small page parsed in place,
a crawl's ``include_paths`` on each link), so one request froze the reactor thread, and every
other caller, for minutes. ``re`` cannot be interrupted and the ``regex`` module's ``timeout=``
would still hold the thread up to its budget on every search; RE2 (``google-re2``) has no
backtracking to run away, so a search costs about as much as reading the text.

What RE2 does not have (backreferences such as ``\\1``, lookarounds such as ``(?=x)``) is refused
when the request is validated, a 400 naming the field, before anything is fetched. Its ``\\d``,
``\\w`` and ``\\s`` are ASCII; ``\\p{L}`` and friends say Unicode classes.
"""

from __future__ import annotations

import re
from typing import Any, Final

import re2
from lxml import etree

__all__ = ["Pattern", "UnusablePattern", "UnusableXPath", "check_xpath", "compile_pattern"]

Pattern = Any  # re2's compiled pattern: search(text) -> a match or None, groups
_OPTIONS: Final = re2.Options()
_OPTIONS.log_errors = False  # a caller's bad pattern is their 400, not the service's log line


class UnusablePattern(ValueError):
    """RE2 cannot compile the pattern; the message says why, for the caller."""


def compile_pattern(pattern: str) -> Pattern:
    """``pattern`` compiled by RE2; raises :class:`UnusablePattern`."""
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise UnusablePattern(str(reason) or "not a regular expression RE2 runs") from None
    except (TypeError, UnicodeError, ValueError):  # lone surrogates and the like
        raise UnusablePattern("not a regular expression RE2 runs") from None


class UnusableXPath(ValueError):
    """The XPath would fail on a page; the message says why, for the caller."""


# XPath 1.0's functions, the node tests written like them, and the operators a "(" may follow
_XPATH_CALLABLE: Final = frozenset(
    "last position count id local-name namespace-uri name string concat starts-with contains "
    "substring-before substring-after substring string-length normalize-space translate "
    "boolean not true false lang number sum floor ceiling round "
    "node text comment processing-instruction and or div mod".split()
)
_XPATH_LITERAL: Final = re.compile(r"\"[^\"]*\"|'[^']*'")
# a QName's prefix (``re:test``, ``@xlink:href``), not an axis (``child::``)
_XPATH_PREFIX: Final = re.compile(r"(?<![\w.:-])([A-Za-z_][\w.-]*):(?=[A-Za-z_*])")
_XPATH_CALL: Final = re.compile(r"(?<![\w.:$-])([A-Za-z_][\w.-]*)\s*\(")
_PROBE: Final = "<html><body><p>x</p></body></html>"


def check_xpath(xpath: etree.XPath, source: str) -> None:
    """Raises :class:`UnusableXPath` for what lxml compiled from ``source`` but can only fail on
    when it meets it on a page: an undefined prefix, variable or function."""
    bare = _XPATH_LITERAL.sub('""', source)
    prefix = _XPATH_PREFIX.search(bare)
    if prefix is not None:
        raise UnusableXPath(f"undefined namespace prefix {prefix.group(1)!r}")
    if "$" in bare:
        raise UnusableXPath("no variables")
    for call in _XPATH_CALL.finditer(bare):
        if call.group(1) not in _XPATH_CALLABLE:
            raise UnusableXPath(f"unknown function {call.group(1)!r}")
    # on a page of one paragraph, parsed per call (lxml's trees are not shared between
    # threads): what fails everywhere fails here, and costs nothing
    try:
        xpath(etree.fromstring(_PROBE, etree.HTMLParser()))
    except etree.XPathError as exc:
        raise UnusableXPath(str(exc)) from None
