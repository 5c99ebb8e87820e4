"""Per-test results of the runners prereview parses (pytest, go, cargo, jest, maven, and the JavaScript
runners: mocha's spec and TAP reporters, `node --test` in TAP and spec form, vitest), and the failing
assertion of one test for each — so a base with one failing mocha test is a base with one failing test
(not "no test ran"), and a broken test's finding quotes what it asserted ("Expected values to be
strictly equal: -1 !== 5").

Test names are the titles joined with " > " ("calc > adds numbers"); vitest's start with the file.
"""

from __future__ import annotations

import re

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # colour and cursor codes in a runner's output


def parse_js(out: str) -> dict[str, object] | None:
    """Counts and failing test names from mocha / node --test / vitest output; None when it is none."""
    out = ANSI.sub("", out)
    for parse in (_vitest, _tap, _node_spec, _mocha_spec):
        got = parse(out)
        if got is not None:
            return got
    return None


_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_PYTEST_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+.* in [\d.]+s", re.M)
_PYTEST_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)
_CARGO = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
_JEST = re.compile(r"^Tests:\s+(.*)$", re.M)
_MAVEN = re.compile(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)\s*$", re.M)


def parse_output(out: str) -> dict[str, object]:
    """Pass/fail counts and failing test ids from pytest, go, cargo, jest or maven output (best effort)."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failing: list[str] = []
    summaries = _PYTEST_SUMMARY.findall(out)
    if summaries:
        for n, word in _PYTEST_COUNT.findall(summaries[-1]):
            key = {"error": "errors", "xpassed": "passed", "xfailed": "skipped"}.get(word, word)
            counts[key] = counts.get(key, 0) + int(n)
        failing = _PYTEST_FAILED.findall(out)
    elif cargo := _CARGO.findall(out):
        counts["passed"] = sum(int(c[0]) for c in cargo)
        counts["failed"] = sum(int(c[1]) for c in cargo)
        failing = re.findall(r"^test (\S+) \.\.\. FAILED", out, re.M)
    elif jest := _JEST.findall(out):
        for n, word in re.findall(r"(\d+) (passed|failed|skipped)", jest[-1]):
            counts[word] += int(n)
        failing = re.findall(r"^\s+● (.+?)\s*$", out, re.M)
    elif mvn := _MAVEN.findall(out):
        run, fail, err, skip = (int(x) for x in mvn[-1])
        counts.update(passed=run - fail - err - skip, failed=fail, errors=err, skipped=skip)
    elif (js := parse_js(out)) is not None:  # mocha, node --test, vitest
        return js
    else:  # go test
        failing = re.findall(r"^\s*--- FAIL: (\S+)", out, re.M)
        counts["failed"] = len(failing)
        counts["passed"] = len(re.findall(r"^\s*--- PASS: ", out, re.M))
    return {**counts, "failing": tuple(dict.fromkeys(failing)), "uncollected": _uncollected(out)}


def _uncollected(out: str) -> tuple[str, ...]:
    """`module: why` for each test module pytest could not import (its `ERROR collecting` sections, read
    before the run's output is cut to its tail, where hundreds of failures can push them out)."""
    got = []
    for section in re.split(r"^_{3,} ERROR collecting ", out, flags=re.M)[1:]:
        module = section.split(" _", 1)[0].strip()
        why = re.search(r"^E\s+((?:\w+\.)*\w*(?:Error|Exception)\b.*)$", section.split("\n=", 1)[0], re.M)
        got.append(f"{module}: {why.group(1).strip()[:160]}" if why else module)
    return tuple(got)


def _result(passed: int, failed: int, skipped: int, failing: list[str]) -> dict[str, object]:
    return {
        "passed": passed,
        "failed": max(failed, len(failing)),
        "errors": 0,
        "skipped": skipped,
        "failing": tuple(dict.fromkeys(failing)),
    }


def _vitest(out: str) -> dict[str, object] | None:
    m = re.findall(r"^\s+Tests\s{2,}(.+)$", out, re.M)
    if not m or not re.search(r"^\s*Test Files\s{2,}", out, re.M):
        return None
    counts = dict((w, int(n)) for n, w in re.findall(r"(\d+) (passed|failed|skipped|todo)", m[-1]))
    failing = [f.strip() for f in re.findall(r"^\s*FAIL\s+(.+?\s>\s.+?)\s*$", out, re.M)]
    return _result(counts.get("passed", 0), counts.get("failed", 0), counts.get("skipped", 0), failing)


def _tap(out: str) -> dict[str, object] | None:
    """TAP from mocha (`not ok 1 calc adds numbers`) or node --test (`# Subtest:` nesting, suites that
    failed only through their subtests left out)."""
    tests = re.search(r"^# tests (\d+)$", out, re.M)
    if not tests or not re.search(r"^(?:\s*)(?:not )?ok \d+", out, re.M):
        return None
    n = {k: int(v) for k, v in re.findall(r"^# (pass|fail|skipped|todo|cancelled) (\d+)$", out, re.M)}
    failing: list[str] = []
    stack: list[tuple[int, str]] = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if m := re.match(r"^\s*# Subtest: (.+)$", line):
            stack = [s for s in stack if s[0] < indent] + [(indent, m.group(1).strip())]
        elif m := re.match(r"^\s*not ok \d+(?: -)? (.+?)(?: # .*)?$", line):
            if _yaml_field(lines, i, "failureType") == "subtestsFailed":
                continue
            path = [t for ind, t in stack if ind < indent] + [m.group(1).strip()]
            failing.append(" > ".join(path))
    cancelled = n.get("cancelled", 0)
    return _result(
        n.get("pass", 0), n.get("fail", 0) + cancelled, n.get("skipped", 0) + n.get("todo", 0), failing
    )


def _yaml_field(lines: list[str], at: int, key: str) -> str:
    """A field of the YAML block right after a TAP `not ok` line (node --test)."""
    for line in lines[at + 1 : at + 40]:
        s = line.strip()
        if s == "...":
            break
        if s.startswith(f"{key}:"):
            return s.split(":", 1)[1].strip().strip("'\"")
    return ""


def _node_spec(out: str) -> dict[str, object] | None:
    if not re.search(r"^ℹ tests \d+$", out, re.M):
        return None
    n = {k: int(v) for k, v in re.findall(r"^ℹ (pass|fail|skipped|todo|cancelled) (\d+)$", out, re.M)}
    section = out.split("✖ failing tests:", 1)[1] if "✖ failing tests:" in out else ""
    failing = re.findall(r"^✖ (.+?) \([\d.]+m?s\)$", section, re.M)
    return _result(n.get("pass", 0), n.get("fail", 0) + n.get("cancelled", 0), n.get("skipped", 0), failing)


def _mocha_spec(out: str) -> dict[str, object] | None:
    passing = re.search(r"^\s+(\d+) passing \(", out, re.M)
    if not passing:
        return None
    failed = re.search(r"^\s+(\d+) failing$", out, re.M)
    pending = re.search(r"^\s+(\d+) pending$", out, re.M)
    failing = [" > ".join(t) for t, _ in _mocha_failures(out)]
    return _result(
        int(passing.group(1)),
        int(failed.group(1)) if failed else 0,
        int(pending.group(1)) if pending else 0,
        failing,
    )


def _mocha_failures(out: str) -> list[tuple[list[str], str]]:
    """(titles, message) of each numbered failure after mocha's `N failing` line."""
    m = re.search(r"^\s+\d+ failing$", out, re.M)
    if not m:
        return []
    lines = out[m.end() :].splitlines()
    found: list[tuple[list[str], str]] = []
    i = 0
    while i < len(lines):
        head = re.match(r"^\s+\d+\) (.+)$", lines[i])
        if not head:
            i += 1
            continue
        titles = [head.group(1).strip()]
        while not titles[-1].endswith(":") and i + 1 < len(lines) and lines[i + 1].strip():
            i += 1
            titles.append(lines[i].strip())
        titles[-1] = titles[-1].removesuffix(":")
        message: list[str] = []
        i += 1
        while i < len(lines) and not re.match(r"^\s+at |^\s+\d+\) ", lines[i]):
            if lines[i].strip() == "+ expected - actual":  # the diff below repeats the message
                while i + 1 < len(lines) and not re.match(r"^\s+at |^\s+\d+\) ", lines[i + 1]):
                    i += 1
            elif lines[i].strip():
                message.append(lines[i].strip())
            i += 1
        found.append((titles, " ".join(message)))
    return found


# ---------------------------------------------------------------- the failing assertion of one test


def assertion(out: str, test: str) -> str:
    """What `test` asserted when it failed, quoted from the runner's own report ("" when not found):
    pytest's `E` lines, go's `file_test.go:8: …` lines, jest's and vitest's expectation, mocha's and
    node's assertion message."""
    out = ANSI.sub("", out)
    finders = (_pytest_assertion, _go_assertion, _node_tap_assertion, _node_spec_assertion, _mocha_assertion)
    for find in (*finders, _after_title):
        got = find(out, test)
        if got:
            return re.sub(r"\s+", " ", got).strip()[:300]
    return ""


def _pytest_assertion(out: str, test: str) -> str:
    name = test.rsplit("::", 1)[-1]
    block = re.search(
        rf"^_{{3,}} (?:\S+::)?{re.escape(name)} _{{3,}}$(.*?)(?=^_{{3,}} |^={{3,}}|\Z)", out, re.M | re.S
    )
    text = block.group(1) if block else ""
    lines = [ln[1:].strip() for ln in text.splitlines() if re.match(r"^E\s", ln)]
    return " / ".join(ln for ln in lines[:3] if ln)


def _go_assertion(out: str, test: str) -> str:
    """`go test` prints a test's log lines after its `--- FAIL:` line; `go test -v` between its
    `=== RUN` and its `--- FAIL:` line."""
    name = re.escape(test)
    m = re.search(rf"^\s*--- FAIL: {name} \(.*?\)$\n((?:\s{{4,}}.*\n?)+)", out, re.M) or re.search(
        rf"^=== RUN\s+{name}$\n((?:(?!=== RUN|--- FAIL: {name} ).*\n)*?)\s*--- FAIL: {name} \(", out, re.M
    )
    if not m:
        return ""
    lines = [ln.strip() for ln in m.group(1).splitlines() if re.match(r"^\s+\S+\.go:\d+: ", ln)]
    lines = lines or [ln.strip() for ln in m.group(1).splitlines() if ln.strip() and "--- " not in ln]
    return " / ".join(lines[:3])


def _node_tap_assertion(out: str, test: str) -> str:
    last = test.split(" > ")[-1]
    lines = out.splitlines()
    for i, line in enumerate(lines):
        yaml = i + 1 < len(lines) and lines[i + 1].strip() == "---"
        if not yaml and re.match(rf"^\s*not ok \d+(?: -)? {re.escape(test)}$", line):
            # mocha's TAP: the message, then the error's own line and its stack
            return _message_until_stack(lines[i + 1 :])
        if re.match(rf"^\s*not ok \d+(?: -)? {re.escape(last)}$", line):
            text: list[str] = []
            in_error = False
            for ln in lines[i + 1 : i + 60]:
                s = ln.strip()
                if s == "...":
                    break
                if s.startswith("error:"):
                    in_error = True
                    rest = s[len("error:") :].strip()
                    if rest not in ("|-", "|", ">-"):
                        text.append(rest.strip("'\""))
                    continue
                if in_error and re.match(r"^\w+:", s):
                    in_error = False
                if in_error and s:
                    text.append(s)
                if s.startswith(("expected:", "actual:")):
                    text.append(s)
            return " ".join(text)
    return ""


def _message_until_stack(lines: list[str]) -> str:
    """The lines up to the first stack frame; from the `…Error: …` line on when there is one."""
    text: list[str] = []
    for ln in lines:
        if re.match(r"^\s+at |^\s*(?:not )?ok \d+|^#", ln):
            break
        if ln.strip():
            text.append(ln.strip())
    start = next((k for k, t in enumerate(text) if re.match(r"^\w*Error\b", t)), 0)
    return " ".join(text[start:])


def _node_spec_assertion(out: str, test: str) -> str:
    section = out.split("✖ failing tests:", 1)[1] if "✖ failing tests:" in out else ""
    m = re.search(rf"^✖ {re.escape(test.split(' > ')[-1])} \([\d.]+m?s\)$", section, re.M)
    return _message_until_stack(section[m.end() :].splitlines()[1:]) if m else ""


def _mocha_assertion(out: str, test: str) -> str:
    for titles, message in _mocha_failures(out):
        if " > ".join(titles) == test:
            return message
    return ""


def _after_title(out: str, test: str) -> str:
    """jest (`● a › b`) and vitest (` FAIL  file > a > b`): the lines after the failure's title."""
    jest = test.replace(" > ", " › ")
    for title in (rf"^\s*FAIL\s+{re.escape(test)}\s*$", rf"^\s*● {re.escape(jest)}\s*$"):
        m = re.search(title, out, re.M)
        if m:
            text: list[str] = []
            for ln in (x.strip() for x in out[m.end() :].splitlines()[:14]):
                if ln.startswith(("❯", "at ", "⎯", "- Expected", "●")):
                    break
                text += [ln] if ln else []
            return " ".join(text[:6])
    return ""
