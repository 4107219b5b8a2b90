#!/usr/bin/env python3
"""Tests tools/check_exercise on the programs the build made (it builds nothing itself):
against solutions/ every chapter must report DONE and exit 0 with every test tied to a
TODO; against the pristine stubs every chapter must exit 1 and name each of its TODOs
with the file and line of the stub.

    check_exercise_test.py BUILD_DIR
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import exercise_lib as ex  # noqa: E402


def run(chapter: str, flag: str, build_dir: str):
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "check_exercise"), chapter[:2],
                           flag, "--build-dir", build_dir, "--no-build"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def main() -> int:
    build_dir = sys.argv[1]
    problems = []
    for chapter in ex.all_chapters():
        nn = chapter[:2]
        code, out = run(chapter, "--solutions", build_dir)
        if code != 0 or f"ex{nn}: DONE" not in out:
            problems.append(f"ex{nn} --solutions: exit {code}, expected 0 and DONE\n{out}")
        code, out = run(chapter, "--stubs", build_dir)
        if code != 1 or f"ex{nn}: NOT DONE" not in out:
            problems.append(f"ex{nn} --stubs: exit {code}, expected 1 and NOT DONE\n{out}")
        for tag in ex.solution_tags(chapter):
            where = re.search(rf"^{re.escape(tag)}: .*\n    TODO still in place at \S+/{chapter}/\S+:\d+",
                              out, re.M)
            if not where:
                problems.append(f"ex{nn} --stubs: the report does not name {tag} with its file:line\n{out}")
        print(f"ex{nn}: solutions DONE, stubs NOT DONE naming {len(ex.solution_tags(chapter))} TODOs")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
