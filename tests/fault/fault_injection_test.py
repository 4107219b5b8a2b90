#!/usr/bin/env python3
"""Fault injection on train_gpt (chapter 11): does a run survive what real machines do?

Each case runs the real program, CPU only, with a model small enough that a step takes
milliseconds, and checks what it promises:

  kill  SIGKILL at seeded random moments while it evaluates, saves its checkpoint every
        step and appends to metrics.jsonl, 20 times, resuming after each kill. After
        every kill the saved state must load (`--resume --max-steps 0` exits 0), its
        step must never go back, no temporary checkpoint folder may survive the resume,
        and metrics.jsonl must read as JSON Lines (a half-written last line is allowed
        right after a kill; the resume must drop it).
  disk  the disk fills up during a save: a 4 MiB tmpfs when this machine lets us mount
        one (root with CAP_SYS_ADMIN), and always a file-size limit (RLIMIT_FSIZE, so
        writes fail with EFBIG). train_gpt must exit non-zero naming the failed write,
        the previous checkpoint must be intact byte for byte and still load, and no
        `*.tmp`, `*.tmp-*` or empty file may be left behind.
  lock  a second run on the same out-dir while the first is training: it must be
        refused at once ("... is in use by another run (...)") without touching the
        folder, and the first, then stopped with Ctrl-C, must save and exit 0 with a
        checkpoint that loads.

Usage: fault_injection_test.py --train-gpt PATH --work-dir DIR --case kill|disk|lock
Exit status 0: passed; 1: failed (what and why on stderr); 77: skipped.
"""
import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

TINY = ["--device", "cpu", "--n-layer", "1", "--n-head", "2", "--n-embd", "16",
        "--block-size", "16", "--batch-size", "4", "--eval-iters", "2", "--samples", "0"]
# Options that --resume accepts (it refuses the model-shape flags: the checkpoint has them).
RESUME = ["--device", "cpu", "--eval-iters", "2", "--samples", "0", "--resume"]


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def corpus_text():
    """About 20 KB of plain text, the same every time (a tiny vocabulary, quick to prepare)."""
    rng = random.Random(7)
    words = ["the", "model", "learns", "a", "character", "at", "a", "time", "and", "then",
             "samples", "text", "from", "what", "it", "saw", "zero", "gradient", "step"]
    lines = []
    while sum(len(line) + 1 for line in lines) < 20000:
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) + ".")
    return "\n".join(lines) + "\n"


class Runner:
    def __init__(self, train_gpt, work):
        self.train_gpt = train_gpt
        self.work = work
        self.data = work / "corpus.txt"
        self.data.write_text(corpus_text())

    def start(self, out, args, preexec=None):
        return subprocess.Popen([self.train_gpt, "--out-dir", str(out)] + args,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=preexec)

    def run(self, out, args, preexec=None, timeout=120):
        p = self.start(out, args, preexec)
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
            raise Failure(f"train_gpt {' '.join(args)} ran past {timeout} s\n{stdout}\n{stderr}")
        return p.returncode, stdout, stderr

    def fresh(self, out, *extra, preexec=None):
        return self.run(out, TINY + ["--data", str(self.data)] + list(extra), preexec)

    def verify_loads(self, out):
        """The saved state loads and resumes; returns its step (from 'resuming ... at step N')."""
        rc, stdout, stderr = self.run(out, RESUME + ["--max-steps", "0"])
        check(rc == 0, f"the checkpoint in {out} does not load (exit {rc}):\n{stdout}\n{stderr}")
        m = re.search(r"resuming .* at step (\d+)", stdout)
        check(m is not None, f"no 'resuming ... at step N' line:\n{stdout}")
        return int(m.group(1))


def metrics_lines(path, allow_partial_last):
    """The records of a metrics.jsonl; every line must be a JSON object (but the last, if
    allowed and it has no newline: a write cut short by a kill)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    last = lines.pop()  # "" when the file ends with a newline
    records = []
    for i, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise Failure(f"{path} line {i + 1} is not JSON ({e}): {line[:120]!r}")
        check(isinstance(records[-1], dict) and "step" in records[-1],
              f"{path} line {i + 1} is not a metrics record: {line[:120]!r}")
    check(last == "" or allow_partial_last, f"{path} ends in an unterminated line {last[:80]!r}")
    return records


# Leftovers a resume is allowed to keep after a kill (none: the run repairs best/ and
# removes a staging folder of its data when it starts).
KNOWN_KILL_LEFTOVERS = []


def leftovers(out, allowed=()):
    """Temporary files or folders and empty files anywhere under `out`, but those whose
    name matches a pattern of `allowed` (printed as notes, their contents not searched)."""
    bad = []
    for root, dirs, files in os.walk(out):
        for name in list(dirs) + files:
            p = Path(root) / name
            if any(a.search(name) for a in allowed):
                print(f"note: known gap, left behind after a kill: {p.relative_to(out)}")
                if name in dirs:
                    dirs.remove(name)
            elif (name.endswith(".tmp") or ".tmp-" in name or name.startswith(".tmp")
                  or name.endswith(".staging") or name.endswith(".old")):
                bad.append(f"{p} (temporary)")
            elif name in files and p.stat().st_size == 0 and name != ".lock":
                bad.append(f"{p} (empty)")
    return bad


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- kill -9

def case_kill(runner, seed=20261201, kills=20):
    rng = random.Random(seed)
    out = runner.work / "out"
    # Evaluate, log and save every step, so most moments are inside a write.
    busy = ["--max-steps", "1000000", "--eval-every", "1", "--log-every", "1"]
    saved_step = None  # step of the last state known to load
    for i in range(kills):
        if saved_step is None:  # nothing saved yet: a fresh run
            args = TINY + ["--data", str(runner.data)] + busy
        else:
            args = RESUME + busy
        p = runner.start(out, args)
        delay = rng.uniform(0.05, 1.0)
        time.sleep(delay)
        if p.poll() is not None:
            stdout, stderr = p.communicate()
            raise Failure(f"kill {i + 1}: train_gpt ended on its own (exit {p.returncode}) "
                          f"before the kill at {delay:.2f} s:\n{stdout}\n{stderr}")
        p.send_signal(signal.SIGKILL)
        p.communicate()
        metrics_lines(out / "metrics.jsonl", allow_partial_last=True)
        if not (out / "checkpoint").exists() and not (out / "checkpoint.old").exists():
            check(saved_step is None, f"kill {i + 1}: the checkpoint of step {saved_step} is gone")
            print(f"kill {i + 1:2d} at {delay:.2f} s: before the first checkpoint")
            continue
        step = runner.verify_loads(out)
        check(saved_step is None or step >= saved_step,
              f"kill {i + 1}: resumed at step {step}, but step {saved_step} had been saved")
        saved_step = step
        records = metrics_lines(out / "metrics.jsonl", allow_partial_last=False)
        steps = [r["step"] for r in records]
        check(steps == sorted(steps) and (not steps or steps[-1] <= step),
              f"kill {i + 1}: metrics steps out of order or beyond the checkpoint's {step}: "
              f"{steps[-10:]}")
        bad = leftovers(out, allowed=KNOWN_KILL_LEFTOVERS)
        check(not bad, f"kill {i + 1}: left behind after the resume: {bad}")
        print(f"kill {i + 1:2d} at {delay:.2f} s: resumed at step {step}, "
              f"{len(records)} metrics records")
    check(saved_step is not None and saved_step > 0, "no kill happened after a checkpoint")


# ---------------------------------------------------------------- full disk

def can_mount_tmpfs(mnt):
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    mnt.mkdir(parents=True, exist_ok=True)
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                        capture_output=True).returncode == 0
    return ok


def expect_clean_failure(runner, out, step, label, preexec, message_re):
    """Resumes the run in `out` (last saved at `step`) with writes failing; checks how it
    fails and what it leaves."""
    before = snapshot(out / "checkpoint")
    rc, stdout, stderr = runner.run(out, RESUME + ["--max-steps", str(step + 3),
                                                   "--eval-every", "1"], preexec=preexec)
    check(rc != 0, f"{label}: train_gpt exited 0 although its writes fail:\n{stdout}\n{stderr}")
    check(re.search(message_re, stderr) is not None and "train_gpt: " in stderr,
          f"{label}: expected a 'train_gpt: ...' message matching /{message_re}/, got:\n{stderr}")
    print(f"{label}: exit {rc}, {stderr.strip().splitlines()[-1]}")
    after = snapshot(out / "checkpoint")
    check(after == before, f"{label}: the previous checkpoint changed: {before} -> {after}")
    bad = leftovers(out)
    check(not bad, f"{label}: left behind: {bad}")


def case_disk(runner):
    # (1) A real full disk, when a tmpfs can be mounted here.
    mnt = runner.work / "tmpfs"
    if can_mount_tmpfs(mnt):
        try:
            out = mnt / "out"
            rc, stdout, stderr = runner.fresh(out, "--max-steps", "4", "--eval-every", "2")
            check(rc == 0, f"tmpfs: the first run failed:\n{stdout}\n{stderr}")
            step = runner.verify_loads(out)
            filler = mnt / "filler"
            with open(filler, "wb") as f:  # fill what is left, but for ~24 KiB
                st = os.statvfs(mnt)
                f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - 24 * 1024))
            expect_clean_failure(runner, out, step, "tmpfs full", None,
                                 r"No space left on device|disk full")
            filler.unlink()
            step = runner.verify_loads(out)  # and with space again, it carries on
            print(f"tmpfs: with space again, resumed at step {step}")
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
    else:
        print("tmpfs: cannot mount one here (not root or no CAP_SYS_ADMIN); "
              "using the file-size limit only")

    # (2) Writes that fail with EFBIG beyond 16 KiB (the optimizer state is larger).
    out = runner.work / "out"
    rc, stdout, stderr = runner.fresh(out, "--max-steps", "4", "--eval-every", "2")
    check(rc == 0, f"the first run failed:\n{stdout}\n{stderr}")
    step = runner.verify_loads(out)

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))

    expect_clean_failure(runner, out, step, "RLIMIT_FSIZE", limit_file_size,
                         r"File too large|disk full")
    step = runner.verify_loads(out)
    print(f"RLIMIT_FSIZE: without the limit, resumed at step {step}")


# ---------------------------------------------------------------- two runs, one out-dir

def case_lock(runner):
    out = runner.work / "out"
    # The first run trains until it is interrupted (Ctrl-C: it saves and exits 0).
    first = runner.start(out, TINY + ["--data", str(runner.data), "--max-steps", "1000000",
                                      "--eval-every", "20"])
    deadline = time.time() + 60
    while not (out / "metrics.jsonl").exists():  # it holds the lock and is training
        if first.poll() is not None:
            raise Failure(f"the first run ended early (exit {first.returncode}): "
                          f"{first.communicate()}")
        check(time.time() < deadline, "the first run did not start training within 60 s")
        time.sleep(0.02)
    before = snapshot(out / "data")
    rc, stdout, stderr = runner.fresh(out, "--max-steps", "5")
    check(first.poll() is None, "the first run ended while the second one ran")
    check(rc != 0, f"the second run was not refused:\n{stdout}\n{stderr}")
    check(re.search(r"is in use by another run \(.+\)", stderr) is not None,
          f"the second run's message does not say the folder is in use:\n{stderr}")
    print(f"second run: exit {rc}, {stderr.strip()}")
    check(snapshot(out / "data") == before, "the second run changed the first run's data")
    time.sleep(0.3)  # the first run carries on training meanwhile
    first.send_signal(signal.SIGINT)
    out1, err1 = first.communicate(timeout=120)
    check(first.returncode == 0, f"the first run failed (exit {first.returncode}):\n{out1}\n{err1}")
    m = re.search(r"interrupted after step (\d+)", out1)
    check(m is not None, f"the first run did not report its interrupted save:\n{out1}")
    step = int(m.group(1))
    records = metrics_lines(out / "metrics.jsonl", allow_partial_last=False)
    check(records and records[-1]["step"] <= step,
          f"the first run's metrics end at {records[-1]['step'] if records else 'nothing'}, "
          f"after its last step {step}")
    check(runner.verify_loads(out) == step, f"the first run's checkpoint is not at step {step}")
    check(not leftovers(out), f"left behind: {leftovers(out)}")
    print(f"first run: interrupted and saved at step {step}, {len(records)} metrics records, "
          "its checkpoint loads")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-gpt", required=True)
    ap.add_argument("--work-dir", required=True, type=Path)
    ap.add_argument("--case", required=True, choices=["kill", "disk", "lock"])
    args = ap.parse_args()
    if not hasattr(os, "fork"):
        print("skipped: needs POSIX processes and signals")
        return 77
    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    runner = Runner(args.train_gpt, work)
    start = time.time()
    try:
        {"kill": case_kill, "disk": case_disk, "lock": case_lock}[args.case](runner)
    except Failure as e:
        print(f"FAILED ({args.case}): {e}", file=sys.stderr)
        return 1
    print(f"passed ({args.case}) in {time.time() - start:.1f} s")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
