"""What the change broke: base and head test runs compared, the failure localized on the diff lines most
likely responsible (stack frames of the failure output, then the diff), and the finding that says so."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..change.diff import Diff, FileDiff, is_test_path
from ..types import Finding, PrereviewError
from .runners import assertion

if TYPE_CHECKING:
    from .testrun import TestRun


@dataclass(frozen=True)
class Breakage:
    """Tests failing at head that passed at base."""

    tests: tuple[str, ...]  # ids; ("(test run)",) when the run as a whole broke (timeout, crash)
    base: TestRun
    head: TestRun
    # the changed lines the failing tests executed on a traced rerun (flaky.py); () none, None not traced
    reach: tuple[tuple[str, int], ...] | None = None

    def describe(self) -> str:
        names = [t.rsplit("::", 1)[-1] for t in self.tests]
        shown = ", ".join(names[:3]) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")
        what = "the test run" if self.tests == ("(test run)",) else shown
        quoted = assertion(self.head.output, self.tests[0]) if self.tests != ("(test run)",) else ""
        return f"{what}: {quoted or first_error(self.head.output) or self.head.summary()}"


def compare(base: TestRun, head: TestRun) -> Breakage | None:
    """What the change broke; None when head is fine or was already failing the same way at base."""
    if head.ok:
        return None
    if not base.ok and not base.failing and not base.passed:  # base broken as a whole: nothing to compare
        return None  # (a base whose tests passed and then exited non-zero, e.g. a cache it could not
        # write or a coverage threshold, still says which tests passed)
    new = tuple(t for t in head.failing if t not in set(base.failing))
    if new:
        return Breakage(new, base, head)
    if base.ok:  # failed without naming tests (timeout, crash, collection error)
        return Breakage(("(test run)",), base, head)
    return None


_FRAME = [
    re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)'),  # Python traceback
    re.compile(r"^(?P<path>[\w./-]+\.\w+):(?P<line>\d+)(?::\d+)?(?::| )", re.M),  # pytest --tb, go, gcc…
    re.compile(r"\((?P<path>[\w./-]+\.[jt]sx?):(?P<line>\d+):\d+\)"),  # node stack
]


def frames(output: str) -> list[tuple[str, int]]:
    """(path, line) of stack frames, in output order."""
    found: list[tuple[int, str, int]] = []
    for rx in _FRAME:
        for m in rx.finditer(output):
            found.append((m.start(), m.group("path"), int(m.group("line"))))
    return [(p.removeprefix("./"), n) for _, p, n in sorted(found)]


# a compiler's diagnostic: go (`./x_test.go:924:6: undefined: Compare`), tsc (`src/a.ts(3,1): error TS2304:
# …`, `src/a.ts:3:1 - error TS2304: …`), javac (`A.java:3: error: …`), rustc (`error[E0425]: …`)
_COMPILE_ERROR = re.compile(
    r"^((?:\./)?[\w./-]+\.go:\d+:\d+: .+"
    r"|[\w./-]+\.[cm]?tsx?(?:\(\d+,\d+\)|:\d+:\d+)\s*[-:]\s*error TS\d+: .+"
    r"|[\w./-]+\.java:\d+: error: .+"
    r"|error\[E\d+\]: .+)$",
    re.M,
)


def first_error(output: str) -> str:
    """The first assertion/exception line of a failure (pytest's `E   ` lines, else a `*Error:` line), else
    the first compiler error (a test build that failed: go, tsc, javac, rustc)."""
    m = (
        re.search(r"^E\s+(.+)$", output, re.M)
        or re.search(r"^(\w*(?:Error|Exception)\b.*)$", output, re.M)
        or _COMPILE_ERROR.search(output)
    )
    return m.group(1).strip()[:200] if m else ""


def failure_excerpt(output: str, chars: int = 900) -> str:
    """The first failure's report (pytest's `___ test ___` block), else the output's tail."""
    blocks = re.split(r"^_{3,} .* _{3,}$", output, flags=re.M)
    if len(blocks) > 1:
        first = re.split(r"^={3,}", blocks[1], flags=re.M)[0].strip()
        return first[-chars:]
    return output.strip()[-chars:]


def localize(breakage: Breakage, diff: Diff) -> tuple[str, int]:
    """The changed line most likely responsible: the deepest stack frame in a changed non-test file,
    mapped to the nearest changed line (an added line, or the line just above a deletion); else the
    first changed line of a changed non-test file."""
    files = {f.path: f for f in diff.files if f.status != "deleted" and not is_test_path(f.path)}
    for path, line in reversed(frames(breakage.head.output)):
        f = _match_file(path, files)
        if f is not None and changed_lines(f):
            return f.path, min(changed_lines(f), key=lambda n: (abs(n - line), n))
    for path, line in breakage.reach or ():  # a changed line the failing test executed
        if path in files:
            return path, line
    for f in [*files.values(), *(f for f in diff.files if f.status != "deleted")]:
        if changed_lines(f):
            return f.path, changed_lines(f)[0]
    raise PrereviewError("tests broke but the diff changes no lines to attribute them to")


def _match_file(path: str, files: dict[str, FileDiff]) -> FileDiff | None:
    if path in files:
        return files[path]
    return next((f for p, f in files.items() if path.endswith("/" + p)), None)


def changed_lines(f: FileDiff) -> list[int]:
    """New-side lines a change can be blamed on: added lines, and for each deletion the line above it."""
    out: set[int] = set()
    for h in f.hunks:
        prev: int | None = None
        for i, ln in enumerate(h.lines):
            if ln.kind == "+" and ln.new_no is not None:
                out.add(ln.new_no)
            elif ln.kind == "-" and (i == 0 or h.lines[i - 1].kind != "-"):
                anchor = prev if prev is not None else next((x.new_no for x in h.lines[i:] if x.new_no), None)
                if anchor is not None and not any(x.kind == "+" for x in h.lines):
                    out.add(anchor)
            if ln.new_no is not None:
                prev = ln.new_no
    return sorted(out)


def deleted_after(f: FileDiff, line: int) -> bool:
    """True when the change removed lines right below new-side `line` (and added none in that hunk)."""
    for h in f.hunks:
        if any(x.kind == "+" for x in h.lines):
            continue
        for i, ln in enumerate(h.lines[:-1]):
            if ln.new_no == line and h.lines[i + 1].kind == "-":
                return True
    return False


def breakage_finding(breakage: Breakage, diff: Diff, head_text: str | None) -> Finding:
    path, line = localize(breakage, diff)
    lines = head_text.splitlines() if head_text else []
    quote = lines[line - 1].strip() if 0 < line <= len(lines) else None
    n = len(breakage.tests)
    what = "the test run" if breakage.tests == ("(test run)",) else f"{n} test{'s' if n != 1 else ''}"
    reach, severity = "", "high"
    if breakage.reach:
        shown = ", ".join(f"{p}:{n}" for p, n in breakage.reach[:3])
        reach = f"; the failing test runs the changed line{'s' if len(breakage.reach) > 1 else ''} {shown}"
    elif breakage.reach == ():  # traced, and it never ran a changed line: weaker evidence, and said so
        reach = (
            "; the failing test does not run any changed line (traced): the change may break it indirectly "
            "(data, configuration), or it depends on something else"
        )
        severity = "medium"
    return Finding(
        path=path,
        line=line,
        message=f"This change breaks {what} that passed before ({breakage.base.summary()} at base, "
        f"{breakage.head.summary()} at head) — {breakage.describe()}{reach}",
        severity=severity,
        category="bug",
        source="tests",
        rule_id="tests/broken",
        quote=quote,
    )
