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

    tools/make_exercises.py           # rewrite exercises/ from solutions/
    tools/make_exercises.py --check   # exit 1 if exercises/ is not what we would write
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


def expected_files() -> dict:
    files = {}
    for path in sorted((ROOT / "solutions").rglob("*")):
        if path.is_file():
            rel = path.relative_to(ROOT / "solutions")
            files[rel] = make_stub(path.read_text(), str(path.relative_to(ROOT)))
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare instead of writing; exit 1 on any difference")
    args = parser.parse_args()
    expected = expected_files()
    exercises = ROOT / "exercises"
    present = {p.relative_to(exercises) for p in exercises.rglob("*") if p.is_file()}
    if args.check:
        problems = [f"missing: exercises/{rel}" for rel in expected if rel not in present]
        problems += [f"stale: exercises/{rel}" for rel in present if rel not in expected]
        problems += [f"differs: exercises/{rel}" for rel, text in expected.items()
                     if rel in present and (exercises / rel).read_text() != text]
        for p in problems:
            print(p)
        if problems:
            print("exercises/ is out of date: run tools/make_exercises.py and commit the result")
            return 1
        print(f"exercises/ matches solutions/ ({len(expected)} files)")
        return 0
    for rel in present - set(expected):
        (exercises / rel).unlink()
    for rel, text in expected.items():
        (exercises / rel).parent.mkdir(parents=True, exist_ok=True)
        (exercises / rel).write_text(text)
    print(f"wrote {len(expected)} files under exercises/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
