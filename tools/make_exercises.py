#!/usr/bin/env python3
"""Generates exercises/ from solutions/: the learner's copies of the chapter exercises.

In solutions/NN_topic/* the part to learn sits between two marker lines:

    // BEGIN SOLUTION exNN.K: one sentence saying what to write
    ...the code...
    // END SOLUTION

The generated exercises/NN_topic/* is the same file with each block replaced by

    // TODO(exNN.K): one sentence saying what to write
    ZERO_NOT_IMPLEMENTED("exNN.K");

indented like the BEGIN line. ZERO_NOT_IMPLEMENTED throws, so an untouched stub
fails its test instead of passing by accident.

exercises/ is where learners write their code, so this script never overwrites a
file there that differs from what it would write (that is somebody's work) unless
given --force:

    tools/make_exercises.py            # write missing exercise files; refuse to replace edited ones
    tools/make_exercises.py --force    # maintainers: rewrite exercises/ from solutions/
    tools/make_exercises.py --check    # exit 1 if exercises/ is not what we would write
    tools/make_exercises.py --out DIR [--chapter NN_topic]
                                       # write pristine stubs under DIR (the build does this)
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^(\s*)// BEGIN SOLUTION (ex\d\d\.\d+): (.+)$")
END = re.compile(r"^\s*// END SOLUTION\s*$")


def make_stub(text: str, name: str) -> str:
    out, inside, line_no = [], False, 0
    for line_no, line in enumerate(text.splitlines(keepends=True), 1):
        begin = BEGIN.match(line)
        if begin:
            if inside:
                sys.exit(f"{name}:{line_no}: BEGIN SOLUTION inside another block")
            indent, tag, sentence = begin.groups()
            out.append(f"{indent}// TODO({tag}): {sentence.strip()}\n")
            out.append(f'{indent}ZERO_NOT_IMPLEMENTED("{tag}");\n')
            inside = True
        elif END.match(line):
            if not inside:
                sys.exit(f"{name}:{line_no}: END SOLUTION without BEGIN")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        sys.exit(f"{name}: BEGIN SOLUTION without END")
    return "".join(out)


def expected_files(chapter: str = "") -> dict:
    """Relative path under exercises/ -> the stub text, for one chapter or all."""
    base = ROOT / "solutions"
    top = base / chapter if chapter else base
    if not top.is_dir():
        sys.exit(f"make_exercises: no folder solutions/{chapter}")
    files = {}
    for path in sorted(top.rglob("*")):
        if path.is_file():
            files[path.relative_to(base)] = make_stub(path.read_text(), str(path.relative_to(ROOT)))
    return files


def write_if_changed(path: pathlib.Path, text: str) -> None:
    # Unchanged files keep their time stamps, so the build does not recompile them.
    if path.is_file() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="compare instead of writing; exit 1 on any difference")
    mode.add_argument("--force", action="store_true",
                      help="overwrite exercises/ files that differ (erases a learner's work)")
    mode.add_argument("--out", type=pathlib.Path, help="write the stubs under this folder instead")
    parser.add_argument("--chapter", default="", help="only this chapter folder (NN_topic)")
    args = parser.parse_args()
    expected = expected_files(args.chapter)

    if args.out:
        for rel, text in expected.items():
            write_if_changed(args.out / rel, text)
        return 0

    exercises = ROOT / "exercises"
    top = exercises / args.chapter if args.chapter else exercises
    present = {p.relative_to(exercises) for p in top.rglob("*") if p.is_file()}
    differs = sorted(rel for rel, text in expected.items()
                     if rel in present and (exercises / rel).read_text() != text)
    missing = sorted(rel for rel in expected if rel not in present)
    stale = sorted(rel for rel in present if rel not in expected)
    if args.check:
        for rel in missing:
            print(f"missing: exercises/{rel}")
        for rel in stale:
            print(f"stale: exercises/{rel}")
        for rel in differs:
            print(f"differs: exercises/{rel}")
        if missing or stale or differs:
            print("exercises/ is not what tools/make_exercises.py makes from solutions/.\n"
                  "Learners: that is expected once you have written code in exercises/; "
                  "this check is for maintainers.\n"
                  "Maintainers: after changing solutions/, run tools/make_exercises.py --force "
                  "(it overwrites exercises/) and commit both.")
            return 1
        print(f"exercises/ matches solutions/ ({len(expected)} files)")
        return 0

    if (differs or stale) and not args.force:
        for rel in differs:
            print(f"not overwritten (it differs from the stub): exercises/{rel}")
        for rel in stale:
            print(f"not removed (no solution file has its name): exercises/{rel}")
        print("These files may hold your work. Nothing was changed. To replace them with fresh "
              "stubs anyway, run tools/make_exercises.py --force")
        return 1
    for rel in stale:
        (exercises / rel).unlink()
    for rel, text in expected.items():
        write_if_changed(exercises / rel, text)
    print(f"exercises/ now matches solutions/ ({len(expected)} files; "
          f"{len(missing)} written, {len(differs) + len(stale)} replaced or removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
