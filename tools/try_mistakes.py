#!/usr/bin/env python3
"""Proves that the exercise tests catch the mistakes a learner plausibly makes.

tests/exercises/NN_topic/mistakes.txt lists them, one block each:

    mistake ex03.3: plain least squares (every weight 1 instead of 1 / t^2)
    file copy_model.h
    - const double w = 1.0 / (s.seconds * s.seconds);
    + const double w = 1.0;

A `-` line names a line of the solution (compared without its indentation; every line
equal to it is replaced), the `+` lines after it are what it becomes (indented like the
line they replace; none deletes it). For each mistake this script writes the solution
with that edit into the build folder's exercise_copies/mistake/NN_topic, builds
exNN_mistake_tests, runs it and requires at least one test to fail. A mistake that no
test catches, or an edit that matches no line or does not compile, fails the run. A
mistake whose TODO is checked only by tests that skip here (GPU tests on a machine
without one) is reported as not checked on this machine, neither caught nor failed.

    tools/try_mistakes.py --build-dir build/default          # every chapter
    tools/try_mistakes.py --build-dir build/default 03 05    # some chapters
    tools/try_mistakes.py --list 03                          # print the list as Markdown
"""
import argparse
import pathlib
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exercise_lib as ex  # noqa: E402


class Mistake:
    def __init__(self, chapter, tag, what, where):
        self.chapter, self.tag, self.what, self.where = chapter, tag, what, where
        self.edits = []  # (file, old line stripped, [new lines])

    def __str__(self):
        return f"{self.tag} ({self.where}): {self.what}"


def parse(chapter: str) -> list:
    path = ex.ROOT / "tests" / "exercises" / chapter / "mistakes.txt"
    if not path.exists():
        return []
    mistakes, file = [], None
    for no, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.rstrip()
        where = f"{path.relative_to(ex.ROOT)}:{no}"
        if not line or line.startswith("#"):
            continue
        if line.startswith("mistake "):
            tag, _, what = line[len("mistake "):].partition(":")
            mistakes.append(Mistake(chapter, tag.strip(), what.strip(), where))
            file = None
        elif not mistakes:
            sys.exit(f"{where}: expected 'mistake exNN.K: ...' first")
        elif line.startswith("file "):
            file = line[len("file "):].strip()
        elif line.startswith("- ") or line == "-":
            if file is None:
                sys.exit(f"{where}: a '-' line needs a 'file NAME' line before it")
            mistakes[-1].edits.append((file, line[2:].strip(), []))
        elif line.startswith("+ ") or line == "+":
            if not mistakes[-1].edits:
                sys.exit(f"{where}: a '+' line must follow a '-' line")
            mistakes[-1].edits[-1][2].append(line[2:])
        else:
            sys.exit(f"{where}: cannot read '{line}'")
    for m in mistakes:
        if not m.edits:
            sys.exit(f"{m.where}: mistake {m.tag} has no edit")
    return mistakes


def write_mistake(m: Mistake, build_dir: pathlib.Path) -> str:
    """Writes the solution with `m` applied; returns '' or what went wrong."""
    src = ex.ROOT / "solutions" / m.chapter
    dst = build_dir / "exercise_copies" / "mistake" / m.chapter
    texts = {p.name: p.read_text() for p in src.iterdir()}
    for file, old, new in m.edits:
        if file not in texts:
            return f"no file {file} in solutions/{m.chapter}"
        out, hits = [], 0
        for line in texts[file].splitlines(keepends=True):
            if line.strip() == old:
                hits += 1
                pad = line[: len(line) - len(line.lstrip())]
                out += [pad + n + "\n" for n in new]
            else:
                out.append(line)
        if hits == 0:
            return f"no line of {file} reads '{old}'"
        texts[file] = "".join(out)
    dst.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        target = dst / name
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    return ""


def try_round(batch: list, build_dir: pathlib.Path) -> list:
    """Builds and runs one mistake per chapter at once; returns [(mistake, verdict, ok)],
    ok None when the tests that could catch it were all skipped on this machine."""
    verdicts, ready = [], []
    for m in batch:
        problem = write_mistake(m, build_dir)
        if problem:
            verdicts.append((m, f"broken entry: {problem}", False))
        else:
            ready.append(m)
    targets = [f"ex{m.chapter[:2]}_mistake_tests" for m in ready]
    if targets and ex.build(build_dir, targets).returncode != 0:
        built = []
        for m in ready:  # find which one does not compile
            proc = ex.build(build_dir, [f"ex{m.chapter[:2]}_mistake_tests"])
            if proc.returncode != 0:
                verdicts.append((m, "broken entry: does not compile\n"
                                 + ex.compiler_errors(proc.stdout, 12), False))
            else:
                built.append(m)
        ready = built
    for m in ready:
        binary = build_dir / "tests" / "exercises" / m.chapter / f"ex{m.chapter[:2]}_mistake_tests"
        results, _, problem = ex.run_tests(binary, timeout=120)
        failed = [r.name for r in results if r.status == "failed"]
        mine = [r for r in results if m.tag in r.tags]
        if not problem and not failed and mine and all(r.status == "skipped" for r in mine):
            verdicts.append((m, f"not checked on this machine: every test of {m.tag} was skipped"
                             f" ({mine[0].messages[0]})", None))
        elif problem:
            verdicts.append((m, f"caught: {problem}", True))
        elif failed:
            shown = ", ".join(failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
            verdicts.append((m, f"caught by {shown}", True))
        else:
            verdicts.append((m, "NOT CAUGHT: every test passed", False))
    return verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers (default: all)")
    parser.add_argument("--build-dir", type=pathlib.Path, default=ex.ROOT / "build" / "default")
    parser.add_argument("--list", action="store_true", help="print the mistakes as Markdown")
    args = parser.parse_args()
    chapters = [ex.chapter_folder(c) for c in args.chapters] or ex.all_chapters()
    per_chapter = {c: parse(c) for c in chapters}
    if args.list:
        for c, ms in per_chapter.items():
            for m in ms:
                print(f"- {m.tag}: {m.what}")
        return 0
    missing = [c for c, ms in per_chapter.items() if not ms]
    if missing:
        print("no mistakes listed for: " + ", ".join(missing))
    build_dir = args.build_dir.resolve()
    total = sum(len(ms) for ms in per_chapter.values())
    print(f"trying {total} mistakes in {len(chapters) - len(missing)} chapters", flush=True)
    bad, done, unchecked = 0, 0, 0
    for r in range(max((len(ms) for ms in per_chapter.values()), default=0)):
        batch = [ms[r] for ms in per_chapter.values() if r < len(ms)]
        for m, verdict, ok in try_round(batch, build_dir):
            done += 1
            bad += ok is False
            unchecked += ok is None
            mark = "skip" if ok is None else "ok  " if ok else "FAIL"
            print(f"[{done}/{total}] {mark} {m.tag}: {m.what}\n         {verdict}", flush=True)
    for c in chapters:  # leave the mistake copies as the solution, so nothing stale lingers
        dst = build_dir / "exercise_copies" / "mistake" / c
        if dst.exists():
            shutil.rmtree(dst)
    print(f"{total - bad - unchecked} of {total} mistakes caught" + ("" if not bad else f"; {bad} not")
          + ("" if not unchecked else f"; {unchecked} not checked on this machine"))
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
