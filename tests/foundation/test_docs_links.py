"""The docs hold together: every relative link resolves, and the README stays a front page.

Checked in README.md, docs/**/*.md and the bench READMEs: each relative link (inline or a
reference definition, outside code) names a file or folder of the repository, and an ``#anchor``
into a Markdown file names one of its headings, slugged as GitHub slugs them. Links with a scheme
(``https:``, ``mailto:``) are not followed.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def doc_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
             ROOT / "bench" / "README.md", *sorted((ROOT / "bench").glob("*/README.md"))]
    return [f for f in files if f.is_file()]


def prose_lines(text: str, *, blank_code_spans: bool = True) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1, with code spans blanked."""
    lines: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        lines.append((number, CODE_SPAN.sub("", line) if blank_code_spans else line))
    return lines


def links(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        found += [(number, m.group(1)) for m in INLINE_LINK.finditer(line)]
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            found.append((number, definition.group(1)))
    return found


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text, lower case, punctuation dropped, spaces as -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file offers: its headings' slugs (repeats numbered) and HTML ids."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _number, line in prose_lines(path.read_text(encoding="utf-8"), blank_code_spans=False):
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if not heading:
            continue
        slug = github_slug(heading.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(found)


def broken_link(source: Path, target: str) -> str | None:
    """Why ``target``, linked from ``source``, does not resolve; None when it does."""
    if SCHEME.match(target):
        return None
    path_part, _, anchor = target.partition("#")
    resolved = (source.parent / unquote(path_part)).resolve() if path_part else source
    if not resolved.is_relative_to(ROOT):
        return f"{target}: leaves the repository"
    if not resolved.exists():
        return f"{target}: no such file {resolved.relative_to(ROOT)}"
    markdown = resolved.is_file() and resolved.suffix == ".md"
    if anchor and markdown and unquote(anchor) not in anchors(resolved):
        return f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}"
    return None


def test_github_slugs_of_the_headings_this_repository_links_to() -> None:
    expected = {
        "One warm Spark: the Spark Connect server": "one-warm-spark-the-spark-connect-server",
        "Without Docker: `cdclake cluster`": "without-docker-cdclake-cluster",
        "Running on real services (docker-compose)": "running-on-real-services-docker-compose",
        "bench/query — `cdclake query` on a 10M-row table": "benchquery--cdclake-query-on-a-10m-row-table",
        "bench/normalize/exact_prepass — x": "benchnormalizeexact_prepass--x",
        "See [the guide](docs/x.md) **now**": "see-the-guide-now",
    }
    assert {heading: github_slug(heading) for heading in expected} == expected


def test_links_outside_code_are_found() -> None:
    sample = ROOT / "docs" / "guarantees.md"
    assert broken_link(sample, "https://example.com/nowhere") is None
    assert broken_link(sample, "#landing-no-hour-silently-skipped") is None
    assert broken_link(sample, "#no-such-heading") is not None
    assert broken_link(sample, "no-such-file.md") is not None
    assert broken_link(sample, "../../outside.md") is not None
    assert prose_lines("a [x](y.md)\n```\n[z](w.md)\n```\n`[v](u.md)`") == [(1, "a [x](y.md)"), (5, "")]
    assert links(ROOT / "README.md"), "the README links to the docs"


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = [f"{doc.relative_to(ROOT)}:{number}: {why}"
              for number, target in links(doc) if (why := broken_link(doc, target))]
    assert not broken, "\n".join(broken)


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move detail to docs/")
