"""Shared by tools/check_exercise and tools/try_mistakes.py: finding a chapter's
exercise, building one of its test programs, running it and reading gtest's JSON report.

Each exercise test is built from one test source against four copies of the chapter's
exercise files (cmake/ZeroHelpers.cmake, zero_add_exercise): solutions/, the learner's
exercises/, pristine stubs and a copy with one mistake written in.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TAG_BEGIN = re.compile(r"// BEGIN SOLUTION (ex\d\d\.\d+): (.+)$")
TAG_STUB = re.compile(r'ZERO_NOT_IMPLEMENTED\("(ex\d\d\.\d+)"\)')


def chapter_folder(nn: str) -> str:
    """'05' or '5' -> '05_dispatch' (the folder name under solutions/)."""
    if not nn.isdigit():
        sys.exit(f"expected a chapter number such as 05, got '{nn}'")
    nn = f"{int(nn):02d}"
    names = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.name.startswith(nn + "_"))
    if not names:
        have = ", ".join(sorted(p.name[:2] for p in (ROOT / "solutions").iterdir()))
        sys.exit(f"chapter {nn} has no exercise; chapters with exercises: {have}")
    return names[0]


def all_chapters() -> list:
    return sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


def solution_tags(chapter: str) -> dict:
    """exNN.K -> the sentence its BEGIN SOLUTION line gives, in file order."""
    tags = {}
    for path in sorted((ROOT / "solutions" / chapter).iterdir()):
        for line in path.read_text().splitlines():
            m = TAG_BEGIN.search(line)
            if m:
                tags.setdefault(m.group(1), m.group(2).strip())
    return dict(sorted(tags.items(), key=lambda kv: int(kv[0].split(".")[1])))


def stub_locations(folder: pathlib.Path) -> dict:
    """exNN.K -> ['path:line', ...] of the ZERO_NOT_IMPLEMENTED stubs still in `folder`."""
    where = {}
    for path in sorted(folder.iterdir()):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            m = TAG_STUB.search(line)
            if m:
                try:
                    shown = path.relative_to(ROOT)
                except ValueError:
                    shown = path
                where.setdefault(m.group(1), []).append(f"{shown}:{no}")
    return where


def build(build_dir: pathlib.Path, targets: list) -> subprocess.CompletedProcess:
    return subprocess.run(["cmake", "--build", str(build_dir), "--target", *targets],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def compiler_errors(output: str, limit: int = 40) -> str:
    """The part of a build log a person needs: the compiler's error lines with context."""
    lines = output.splitlines()
    keep = [i for i, l in enumerate(lines) if re.search(r"error|undefined reference", l)]
    if not keep:
        return "\n".join(lines[-limit:])
    shown, out = set(), []
    for i in keep:
        for j in range(max(0, i - 2), min(len(lines), i + 4)):
            if j not in shown:
                shown.add(j)
                out.append(lines[j])
    return "\n".join(out[:limit])


class Result:
    """One test of a gtest report: name, 'passed' / 'failed' / 'skipped', messages, tags."""

    def __init__(self, name, status, messages, tags):
        self.name, self.status, self.messages, self.tags = name, status, messages, tags


def run_tests(binary: pathlib.Path, timeout: int = 300):
    """Runs a gtest binary; returns (results, console output, problem or None)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.json"
        env = dict(os.environ, GTEST_COLOR="no")
        try:
            proc = subprocess.run([str(binary), f"--gtest_output=json:{report}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=timeout, env=env, errors="replace")
        except subprocess.TimeoutExpired as e:
            out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(errors="replace")
            return [], out, f"the tests did not finish within {timeout} s (an endless loop?)"
        if not report.exists():
            return [], proc.stdout, f"the test program stopped before finishing (exit {proc.returncode})"
        data = json.loads(report.read_text())
    results = []
    for suite in data.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{suite['name']}.{t['name']}"
            failures = [f.get("failure", "") for f in t.get("failures", [])]
            if failures:
                status = "failed"
            elif t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                status = "skipped"
            else:
                status = "passed"
            tags = t.get("exercise", "").split()
            messages = failures
            if status == "failed":  # a GPU stub's own words come on the console, not in the report
                printed = [l.strip() for l in console_of(proc.stdout, name)
                           if "is not implemented yet" in l and not l.startswith("[")]
                messages = [m for m in printed if all(m not in f for f in failures)] + failures
            if status == "skipped":
                messages = [skip_reason(proc.stdout, name)]
            results.append(Result(name, status, messages, tags))
    # A parameterised test that skips in its fixture's SetUp (a CUDA instance without a
    # GPU) never runs its body, so it records no ZERO_EXERCISE: it checks what its other
    # instances check ("Devices/Suite.Name/Cuda" takes the tags of ".../Cpu").
    def base(name):
        return name.rsplit("/", 1)[0] if name.count("/") >= 2 else name
    tags_of = {base(r.name): r.tags for r in results if r.tags}
    for r in results:
        if not r.tags and r.status == "skipped":
            r.tags = list(tags_of.get(base(r.name), []))
    return results, proc.stdout, None


def console_of(console: str, name: str) -> list:
    """The lines a test printed, between '[ RUN      ] name' and its result line."""
    lines, inside, out = console.splitlines(), False, []
    for line in lines:
        if line.startswith("[ RUN      ]"):
            inside = line.split("]", 1)[1].strip() == name
        elif inside and (line.startswith("[       OK ]") or line.startswith("[  FAILED  ]")):
            break
        elif inside:
            out.append(line)
    return out


def skip_reason(console: str, name: str) -> str:
    """The reason GTEST_SKIP() gave, from the console output just before '[  SKIPPED ] name'."""
    lines = console.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("[  SKIPPED ]") and line.split("]", 1)[1].strip().startswith(name):
            for j in range(i - 1, max(-1, i - 6), -1):
                text = lines[j].strip()
                if text and not text.startswith("[") and not text.startswith("Skipped"):
                    return text
    return "skipped"
