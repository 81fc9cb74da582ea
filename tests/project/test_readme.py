"""The README is what a newcomer reads in five minutes: short, no lab notes
(commit hashes, dates, run histories), its first commands the two that set
up and run everything; and every relative link of it and of the user guides
under docs/ leads to a file that is there. No Spark."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 250
MAX_LINE_CHARS = 300

# A token of 7 to 40 hex digits with at least one digit and one letter: a
# commit hash, short or long (a number alone, or a word like "deadbeef", is
# not one).
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
# A calendar date, the way a run log dates its runs; a timestamp in an
# example's rows (the date followed by a time of day) is data, not a date.
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b(?![ T]\d\d:\d\d)")
# [text](target) and ![alt](target); the target up to a space or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")


def _lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a link in code is no link)."""
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line)
    return "\n".join(kept)


def commit_hashes(text: str) -> list[str]:
    return [t for t in HEX.findall(text)
            if re.search(r"[0-9]", t) and re.search(r"[a-f]", t)]


def dates(text: str) -> list[str]:
    return DATE.findall(text)


def relative_links(text: str) -> list[str]:
    """Every link target that is a path in the repository: not a URL, not a
    mail address, not an anchor of the same page; without its anchor."""
    targets = []
    for target in LINK.findall(_prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def first_commands(text: str, n: int = 2) -> list[str]:
    """The first ``n`` commands of the first fenced block, comments dropped."""
    commands, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            if fenced:
                break
            fenced = True
            continue
        if fenced:
            command = line.split("#", 1)[0].strip()
            if command:
                commands.append(command)
    return commands[:n]


def test_the_readme_is_short() -> None:
    lines = _lines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines, at most {MAX_LINES}"
    long = [(i, len(line)) for i, line in enumerate(lines, 1) if len(line) > MAX_LINE_CHARS]
    assert long == [], f"README.md lines over {MAX_LINE_CHARS} characters (line, length): {long}"


def test_the_readme_holds_no_commit_hash_and_no_date() -> None:
    text = README.read_text(encoding="utf-8")
    assert commit_hashes(text) == []
    assert dates(text) == []


def test_the_first_commands_set_up_and_run_everything() -> None:
    assert first_commands(README.read_text(encoding="utf-8")) == [
        "bash scripts/demo.sh", "bash scripts/test.sh"]


def _guides() -> list[Path]:
    """README.md and the user guides under docs/ (not docs/decisions/)."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", _guides(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(doc: Path) -> None:
    missing = [t for t in relative_links(doc.read_text(encoding="utf-8"))
               if not (doc.parent / t).exists()]
    assert missing == [], f"{doc.relative_to(ROOT)} links to missing files: {missing}"


def test_the_checks_see_what_they_look_for() -> None:
    assert commit_hashes("on 2acb49d and 8263cbd, 1234567 rows, deadbeef") == [
        "2acb49d", "8263cbd"]
    assert dates("on 2026-11-30, morning") == ["2026-11-30"]
    assert dates("|2024-01-01 01:30:00|") == []
    text = ("[a](docs/a.md#x) [b](https://x.org) [c](#here) ![d](img/d.png)\n"
            "```\n[e](not/a/link.md)\n```\n")
    assert relative_links(text) == ["docs/a.md", "img/d.png"]
    assert first_commands("# T\n\n```bash\nbash a.sh   # one\n\nbash b.sh\nc\n```\n") == [
        "bash a.sh", "bash b.sh"]
