#!/usr/bin/env python3
"""Draws the book's figures as SVG files in docs/images/, from the project's own data.

    tools/make_figures.py                       # write every figure
    tools/make_figures.py --check               # exit 1 if a committed figure is stale

Measured figures read their numbers from the repository, so they say what the text says:
the roofline takes the H200 output shown in chapters/01_cuda_kernels/README.md, and the
stream timeline takes docs/images/ch08_timeline.csv, which `ch08_async_streams --timeline`
writes. The others are drawn from the rules the code follows: the butterfly offsets of
warp_sum, the ring's chunk schedule, the caching allocator's policy. `--check` (a CTest
test, label docs) also checks that every image a chapter README shows exists.

Doxygen finds an image by its bare name; tools/doxygen_md_filter.py cuts the README's
relative links (../../docs/images/x.svg) with IMAGE_LINK below.
Standard library only: the SVG is written by hand.
"""
import argparse
import csv
import math
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
# One palette for every figure: ink, muted text, grid, and four hues with light tints.
INK, MUTED, GRID = "#1f2933", "#616e7c", "#c5cdd5"
BLUE, ORANGE, GREEN, RED = "#2f6fad", "#e07b24", "#3a8f3a", "#c23b3b"
TINT = {BLUE: "#dbe7f3", ORANGE: "#fbe4cf", GREEN: "#d9eed9", RED: "#f6d8d8", INK: "#eef1f4"}
IMAGE_LINK = re.compile(r"(!\[[^\]]*\]\()(?![a-z]+:)([^)\s]*/)?([^/)\s]+)\)")


def f(v):
    """A coordinate: two decimals at most, so the files are small and reproducible."""
    return f"{v:.2f}".rstrip("0").rstrip(".")


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Svg:
    """A few SVG primitives; render() adds the header and one arrowhead per colour used."""

    def __init__(self, width, height, title):
        self.width, self.height, self.title = width, height, title
        self.parts, self.arrows = [], set()

    def el(self, tag, body=None, **attrs):
        """One element; attribute names use _ for -, numbers are rounded, None is left out."""
        at = " ".join(f'{k.replace("_", "-")}="{v if isinstance(v, str) else f(v)}"'
                      for k, v in attrs.items() if v is not None)
        self.parts.append(f"<{tag} {at}/>" if body is None else f"<{tag} {at}>{esc(body)}</{tag}>")

    def rect(self, x, y, w, h, fill="none", stroke=INK, sw=1.0, rx=3, dash=None):
        self.el("rect", x=x, y=y, width=w, height=h, rx=rx, fill=fill, stroke=stroke,
                stroke_width=sw, stroke_dasharray=dash)

    def line(self, x1, y1, x2, y2, stroke=INK, sw=1.0, dash=None, arrow=False):
        self.path(f"M{f(x1)},{f(y1)} L{f(x2)},{f(y2)}", stroke, sw, dash=dash, arrow=arrow)

    def path(self, d, stroke=INK, sw=1.0, fill="none", dash=None, arrow=False):
        if arrow:
            self.arrows.add(stroke)
        self.el("path", d=d, fill=fill, stroke=stroke, stroke_width=sw, stroke_dasharray=dash,
                marker_end=f"url(#arrow{stroke[1:]})" if arrow else None)

    def circle(self, x, y, r, fill, stroke=INK, sw=1.0):
        self.el("circle", cx=x, cy=y, r=r, fill=fill, stroke=stroke, stroke_width=sw)

    def text(self, x, y, s, size=13, anchor="start", fill=INK, bold=False, mono=False, rotate=None):
        self.el("text", s, x=x, y=y, font_size=size, text_anchor=anchor, fill=fill,
                font_weight="bold" if bold else None, font_family=MONO if mono else None,
                transform=None if rotate is None else f"rotate({f(rotate)} {f(x)} {f(y)})")

    def render(self):
        marks = "".join(
            f'<marker id="arrow{c[1:]}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
            for c in sorted(self.arrows))
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
                f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" '
                f'font-family="{FONT}">\n<title>{esc(self.title)}</title>\n'
                f'<defs>{marks}</defs>\n<rect width="100%" height="100%" fill="#ffffff"/>\n')
        return head + "\n".join(self.parts) + "\n</svg>\n"


# ---------------------------------------------------------------- chapter 01

def thread_hierarchy():
    s = Svg(820, 480, "Grid, block, warp and thread of one kernel launch")
    s.text(30, 28, "kernel<<<blocks, 256>>>(...): a grid of blocks, a block of warps, "
           "a warp of 32 threads", 15, bold=True)
    s.rect(30, 46, 760, 86, TINT[INK], GRID)
    s.text(42, 66, "grid: gridDim.x = blocks, all running the same function; "
           "blocks run on any SM, in any order", 12, fill=MUTED)
    for i, name in enumerate(["block 0", "block 1", "block 2", "block 3", "...", "last block"]):
        x = 45 + i * 122
        hot = i == 1
        if name != "...":
            s.rect(x, 78, 106, 42, TINT[BLUE] if hot else "#ffffff", BLUE, 2.5 if hot else 1)
        s.text(x + 53, 104, name, 13, "middle", bold=hot)
    s.path("M167,120 L30,176 M273,120 L790,176", MUTED, 1, dash="4 3")
    s.rect(30, 176, 760, 96, TINT[BLUE], BLUE)
    s.text(42, 196, "block 1 (blockIdx.x = 1): blockDim.x = 256 threads = 8 warps, "
           "placed whole on one SM", 12, fill=INK)
    for w in range(8):
        x = 45 + w * 92
        hot = w == 2
        s.rect(x, 208, 84, 52, TINT[ORANGE] if hot else "#ffffff", ORANGE, 2.5 if hot else 1)
        s.text(x + 42, 229, f"warp {w}", 13, "middle", bold=hot)
        s.text(x + 42, 248, f"threads {32 * w}-{32 * w + 31}", 9, "middle", fill=MUTED)
    s.path("M229,260 L30,316 M313,260 L790,316", MUTED, 1, dash="4 3")
    s.rect(30, 316, 760, 84, TINT[ORANGE], ORANGE)
    s.text(42, 336, "warp 2: threads 64-95 of the block, lanes 0-31, "
           "issuing one instruction together (SIMT)", 12)
    for lane in range(32):
        x = 45 + lane * 22.75
        hot = lane == 5
        s.rect(x, 346, 20, 28, RED if hot else "#ffffff", RED if hot else ORANGE, 1, rx=2)
        if lane in (0, 5, 31):
            s.text(x + 10, 390, str(64 + lane), 10, "middle", fill=RED if hot else MUTED,
                   bold=hot)
    s.text(172, 420, "threadIdx.x = 69: lane 69 % 32 = 5 of warp 69 / 32 = 2", 11, fill=RED)
    s.path("M158.75,374 L158.75,448 L166,448", RED, 1.5, arrow=True)
    s.text(172, 453, "i = blockIdx.x * blockDim.x + threadIdx.x = 1 * 256 + 69 = 325", 15,
           mono=True, bold=True)
    s.text(172, 471, "the element this thread owns; the guard if (i < n) stops threads past "
           "the end", 11, fill=MUTED)
    return s.render()


def ch01_measurements():
    """The H200 numbers shown in chapter 01's README: peaks and the section 5 table."""
    text = (ROOT / "chapters/01_cuda_kernels/README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```\n(.*?)^```", text, re.S | re.M)
    gpu = next(b for b in blocks if "== 5. Memory-bound kernels" in b)
    peak = float(re.search(r"FP32 peak.*?([\d.]+) TFLOP/s", gpu).group(1)) * 1e3
    paper = float(re.search(r"DRAM bandwidth, on paper\s+([\d.]+) GB/s", gpu).group(1))
    n = int(re.search(r"n = (\d+) floats", gpu).group(1))
    # Section 3's FLOPs per element; a kernel it does not list (Zero's add) does one.
    flops = {m[0]: int(m[1]) for m in re.findall(
        r"^(\w+) .*?\s(\d+)\s+\d+\s+\d+\s+[\d.]+$", gpu.split("== 4.")[0], re.M)}
    rows = re.findall(r"^(\S.*?)\s{2,}(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%$", gpu, re.M)
    copy = next(float(r[3]) for r in rows if r[0].startswith("cudaMemcpy"))
    points = []
    for name, mib, _, gbs, _ in rows:
        if name.startswith("cudaMemcpy"):
            continue
        intensity = flops.get(name, 1) / (int(mib) * 2**20 / n)
        points.append((name, intensity, float(gbs)))
    return peak, paper, copy, points


def roofline():
    peak, paper, copy, points = ch01_measurements()
    s = Svg(760, 500, "Roofline of the H200 with chapter 01's measured kernels")
    x0, x1, y0, y1 = 90, 730, 430, 50  # plot box; x: 1e-2..1e3 FLOP/byte, y: 1e1..1e5 GFLOP/s
    px = lambda i: x0 + (math.log10(i) + 2) / 5 * (x1 - x0)
    py = lambda g: y0 - (math.log10(g) - 1) / 4 * (y0 - y1)
    s.text(30, 30, "Roofline of the H200: chapter 01's kernels sit on the memory roof", 15,
           bold=True)
    for e in range(-2, 4):
        s.line(px(10**e), y0, px(10**e), y1, GRID, 0.8)
        s.text(px(10**e), y0 + 18, f"{10**e:g}", 12, "middle", MUTED)
    for e in range(1, 6):
        s.line(x0, py(10**e), x1, py(10**e), GRID, 0.8)
        s.text(x0 - 8, py(10**e) + 4, f"{10**e:,}".replace(",", " "), 12, "end", MUTED)
    s.rect(x0, y1, x1 - x0, y0 - y1, "none", MUTED, 1, rx=0)
    s.text((x0 + x1) / 2, y0 + 40, "arithmetic intensity (FLOP per byte of DRAM traffic)", 13,
           "middle")
    s.text(30, (y0 + y1) / 2, "GFLOP/s", 13, "middle", rotate=-90)
    ridge, ridge_paper = peak / copy, peak / paper
    s.path(f"M{f(px(0.01))},{f(py(0.01 * paper))} L{f(px(ridge_paper))},{f(py(peak))}",
           MUTED, 1.2, dash="5 4")
    s.path(f"M{f(px(0.01))},{f(py(0.01 * copy))} L{f(px(ridge))},{f(py(peak))} "
           f"L{f(px(1000))},{f(py(peak))}", BLUE, 2.5)
    slope = -math.degrees(math.atan((y0 - y1) / 4 / ((x1 - x0) / 5)))
    s.text(px(0.3), py(0.3 * copy) - 10, f"copy bandwidth {copy:.0f} GB/s (measured)", 12,
           fill=BLUE, rotate=slope)
    s.text(px(0.02), py(0.02 * paper) - 10, f"{paper:.0f} GB/s on paper", 11, fill=MUTED,
           rotate=slope)
    s.text(px(1000) - 6, py(peak) - 8, f"FP32 peak {peak / 1e3:.1f} TFLOP/s (on paper, "
           "no tensor cores)", 12, "end", BLUE)
    s.line(px(ridge), py(peak), px(ridge), y0, BLUE, 1, dash="2 3")
    s.text(px(ridge) + 6, y0 - 8, f"ridge point {ridge:.1f} FLOP/byte", 12, fill=BLUE)
    top = 232  # the label block, in the empty corner under the roof
    s.rect(326, top - 18, 400, 24 + 20 * len(points), "#ffffff", GRID, 0.8)
    s.text(334, top, "measured on an H200 (chapter 01, section 5):", 12, fill=MUTED)
    colours = [ORANGE, GREEN, RED]
    for k, (name, intensity, gbs) in enumerate(sorted(points, key=lambda p: p[2])):
        c, ly = colours[k % len(colours)], top + 20 * (k + 1)
        x, y = px(intensity), py(intensity * gbs)
        s.line(x, y, 326, ly - 4, c, 0.8)
        s.circle(x, y, 5, c, "#ffffff", 1.2)
        s.text(334, ly, f"{name}: {intensity * gbs:.0f} GFLOP/s = {gbs:.0f} GB/s × "
               f"{intensity:.3f} FLOP/byte", 12, fill=c)
    return s.render()


# ---------------------------------------------------------------- chapter 02

def warp_butterfly():
    s = Svg(990, 516, "The xor butterfly of a warp sum: 32 lanes, 5 steps")
    s.text(30, 28, "warp_sum: v += __shfl_xor_sync(0xffffffff, v, offset), "
           "offset = 16, 8, 4, 2, 1", 15, bold=True, mono=True)
    lx = lambda lane: 150 + lane * 23
    ry = lambda row: 70 + row * 76
    hot = 5
    for lane in range(32):
        s.text(lx(lane), ry(0) - 12, str(lane), 10, "middle", MUTED)
    for step in range(5):
        off = 16 >> step
        for lane in range(32):
            s.line(lx(lane), ry(step), lx(lane), ry(step + 1), GRID, 0.8)
            s.line(lx(lane ^ off), ry(step), lx(lane), ry(step + 1), GRID, 0.8)
        s.line(lx(hot), ry(step), lx(hot), ry(step + 1), ORANGE, 2)
        s.line(lx(hot ^ off), ry(step), lx(hot), ry(step + 1), ORANGE, 2)
        s.text(20, ry(step + 1) - 30, f"step {step + 1}: xor {off}", 12, fill=INK, bold=True)
        s.text(20, ry(step + 1) - 15, f"lane 5 adds lane {hot ^ off}", 11, fill=ORANGE)
    s.text(20, ry(0) + 4, "each lane's value", 11, fill=MUTED)
    for row in range(6):
        # The lanes whose values lane 5 holds after `row` steps: those equal to 5 mod 32 / 2^row.
        for lane in range(32):
            mine = lane % (32 >> row) == hot % (32 >> row)
            s.circle(lx(lane), ry(row), 4.5, ORANGE if mine else "#ffffff",
                     ORANGE if mine else INK, 1)
        label = ["a value per lane", "sums of 2 lanes", "sums of 4 lanes", "sums of 8 lanes",
                 "sums of 16 lanes", "the sum of all 32"][row]
        s.text(lx(31) + 14, ry(row) + 4, label, 11, fill=MUTED, bold=row == 5)
    s.text(150, ry(5) + 32, "Orange: the lanes whose values lane 5 holds after each step, and "
           "the two values it adds at that step.", 11, fill=MUTED)
    s.text(150, ry(5) + 48, "Every lane does the same with its own partner, all at once: "
           "after 5 steps every lane holds the total.", 11, fill=MUTED)
    return s.render()


# ---------------------------------------------------------------- chapter 04

def caching_allocator():
    s = Svg(900, 470, "The caching allocator: round up, best fit within 2×, else cudaMalloc")
    s.text(30, 28, "CachingPool::Allocate: round up to 512 B, take the smallest free block "
           "that fits, if at most 2× the request", 14, bold=True)
    for x, head in [(30, "request"), (200, "RoundUp (512 B)"), (410, "free blocks, by size"),
                    (610, "result")]:
        s.text(x, 62, head, 12, fill=MUTED, bold=True)
    s.text(410, 76, "(a std::multimap per stream)", 10, fill=MUTED)
    free = [512, 1024, 4096, 8192, 65536, 1 << 20]  # a free list, sorted as the multimap is
    kib = lambda b: f"{b} B" if b < 1024 else f"{b // 1024} KiB" if b < 1 << 20 else "1 MiB"
    by = lambda i: 90 + i * 44
    for i, size in enumerate(free):
        s.rect(410, by(i), 140, 34, TINT[INK], INK)
        s.text(480, by(i) + 22, kib(size), 13, "middle", mono=True)
    cases = []  # CachingPool::Allocate's decisions for three requests
    for req in (4000, 5000, 20000):
        rounded = -(-req // 512) * 512
        blk = next(i for i, size in enumerate(free) if size >= rounded)  # lower_bound
        hit = free[blk] <= 2 * rounded
        result = ([f"hit: {free[blk]} ≤ 2 × {rounded}", "reused as is, no driver call" if
                   free[blk] == rounded else f"a {kib(free[blk])} block, "
                   f"{kib(free[blk] - rounded)} spare"] if hit else
                  [f"miss: {free[blk]} > 2 × {rounded}", f"the {kib(free[blk])} block stays;",
                   f"cudaMalloc({rounded}) makes a new one"])
        cases.append((req, rounded, blk, hit, result))
    for k, (req, rounded, blk, hit, result) in enumerate(cases):
        y, c = 118 + k * 100, GREEN if hit else RED
        s.rect(30, y - 18, 130, 36, "#ffffff", INK)
        s.text(95, y + 5, f"{req} B", 13, "middle", mono=True)
        s.line(160, y, 200, y, INK, 1.2, arrow=True)
        s.rect(200, y - 18, 130, 36, "#ffffff", INK)
        s.text(265, y + 5, f"{rounded} B", 13, "middle", mono=True)
        s.line(330, y, 408, by(blk) + 17, c, 1.5, arrow=True)
        s.text(370, (y + by(blk) + 17) / 2 - 6, "lower_bound", 10, "middle", c)
        s.rect(410, by(blk), 140, 34, "none", c, 2.5)
        s.line(550, by(blk) + 17, 608, y, c, 1.5, dash=None if hit else "5 3", arrow=True)
        s.rect(610, y - 24, 260, 18 + 16 * len(result), TINT[c], c)
        for j, t in enumerate(result):
            s.text(620, y - 4 + 16 * j, t, 12, fill=INK, bold=j == 0)
    s.rect(30, 380, 840, 76, TINT[BLUE], BLUE)
    s.text(42, 400, "Free(ptr): the block goes back into the free list of its stream, under its "
           "size; no cudaFree, which would wait for the GPU.", 12)
    s.text(42, 420, "Counters: a hit adds 1 to hits; a miss adds 1 to misses and raw_allocs. "
           "Blocks are multiples of 512 B, so near sizes share.", 12)
    s.text(42, 440, "TrimFreePool(): cudaFree for every free block. When cudaMalloc runs out of "
           "memory the pool trims, retries once, then throws.", 12)
    return s.render()


# ---------------------------------------------------------------- chapter 08

def read_timeline(path):
    rows = list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))
    return [(int(r["streams"]), int(r["chunk"]), int(r["stream"]), r["op"],
             float(r["start_ms"]), float(r["end_ms"])) for r in rows]


def streams_timeline():
    rows = read_timeline(IMAGES / "ch08_timeline.csv")
    total = {k: max(r[5] for r in rows if r[0] == k) for k in (1, 2)}
    span = 5 * math.ceil(max(total.values()) / 5)
    s = Svg(900, 330, "Two streams overlapping copies with compute: the measured timeline")
    tx = lambda ms: 110 + ms / span * 760
    s.text(30, 28, "Chapter 08, section 6: each chunk's copy and compute, from CUDA events",
           15, bold=True)
    lanes = {(1, 0): 70, (2, 0): 150, (2, 1): 188}
    s.text(30, 56, f"one stream: copy, compute, copy, compute, ... ({total[1]:.1f} ms)", 12,
           fill=MUTED, bold=True)
    s.text(30, 136, f"two streams: a copy runs during the other stream's compute "
           f"({total[2]:.1f} ms)", 12, fill=MUTED, bold=True)
    for (k, st), y in lanes.items():
        s.text(100, y + 18, f"stream {st}", 12, "end")
        s.line(tx(0), y + 13, tx(span), y + 13, GRID, 0.8)
    for k in (1, 2):
        for op, colour in (("copy", BLUE), ("compute", ORANGE)):
            done = 0.0  # one copy engine and one set of SMs: an op runs once the last one ends
            for _, chunk, st, _, start, end in sorted(
                    (r for r in rows if r[0] == k and r[3] == op), key=lambda r: r[5]):
                y, run = lanes[(k, st)], max(start, done)
                done = end
                if run > start:
                    s.rect(tx(start), y, tx(run) - tx(start), 26, TINT[colour], colour, 0.6, 1)
                s.rect(tx(run), y, tx(end) - tx(run), 26, colour, "#ffffff", 0.8, 1)
                if tx(end) - tx(run) > 14:
                    s.text((tx(run) + tx(end)) / 2, y + 18, str(chunk), 11, "middle",
                           "#ffffff", bold=True)
        s.line(tx(total[k]), lanes[(k, 0)] - 6, tx(total[k]), lanes[(k, k - 1)] + 32, INK, 1.2)
    for ms in range(0, span + 1, 5):
        s.line(tx(ms), 222, tx(ms), 227, MUTED, 1)
        s.text(tx(ms), 242, str(ms), 11, "middle", MUTED)
    s.line(tx(0), 222, tx(span), 222, MUTED, 1)
    s.text(tx(span / 2), 262, "ms after the schedule's start event", 12, "middle", MUTED)
    for x, colour, label in [(110, BLUE, "host→device copy (a copy engine)"),
                             (380, ORANGE, "compute, fma_chain (the SMs)")]:
        s.rect(x, 284, 22, 14, colour, colour, 1, 1)
        s.text(x + 30, 296, label, 12)
    s.rect(620, 284, 22, 14, TINT[BLUE], BLUE, 0.6, 1)
    s.text(650, 296, "queued: the engine is busy", 12)
    s.text(110, 320, "Numbers are chunks. Queued time is inferred: an op cannot start before "
           "the previous op of its kind has ended.", 11, fill=MUTED)
    return s.render()


# ---------------------------------------------------------------- chapter 10

def ring_allreduce(ranks=4):
    """The schedule of solutions/10_multi_gpu/ring_allreduce.h, step by step."""
    s = Svg(990, 430, "Ring all-reduce on 4 ranks: reduce-scatter, then all-gather")
    s.text(30, 28, "Ring all-reduce, 4 ranks: at every step each rank sends one chunk to "
           "rank r + 1", 15, bold=True)
    held = [[{r} for _ in range(ranks)] for r in range(ranks)]  # held[r][c]: ranks summed
    steps = [("reduce-scatter", st, lambda r, st=st: (r - st) % ranks) for st in range(ranks - 1)]
    steps += [("all-gather", st, lambda r, st=st: (r + 1 - st) % ranks) for st in range(ranks - 1)]
    cx = lambda col: 90 + col * 128
    ry = lambda r: 104 + r * 66
    for col, colour, name, rule in [
            (0, BLUE, "reduce-scatter", "rank r sends chunk (r - s) mod 4; the receiver adds it"),
            (3, GREEN, "all-gather", "rank r sends chunk (r + 1 - s) mod 4; the receiver copies")]:
        mid = cx(col) + 1.5 * 128 + 56
        s.text(mid, 54, name, 13, "middle", colour, bold=True)
        s.text(mid, 70, rule, 11, "middle", colour)
    s.text(cx(6) + 56, 54, "result", 13, "middle", INK, bold=True)
    for col in (3, 6):
        s.line(cx(col) - 8, 44, cx(col) - 8, ry(ranks - 1) + 40, GRID, 1, dash="4 3")
    for r in range(ranks):
        s.text(20, ry(r) + 19, f"rank {r}", 13, bold=True)
    for col in range(len(steps) + 1):
        if col < len(steps):
            s.text(cx(col) + 56, 88, f"s = {steps[col][1]}", 11, "middle", MUTED, bold=True)
        sends = {r: steps[col][2](r) for r in range(ranks)} if col < len(steps) else {}
        for r in range(ranks):
            for c in range(ranks):
                x, n = cx(col) + c * 29, len(held[r][c])
                fill = {1: "#ffffff", 2: TINT[BLUE], 3: "#9dbbdb"}.get(n, BLUE)
                s.rect(x, ry(r), 26, 28, fill, ORANGE if sends.get(r) == c else INK,
                       2.5 if sends.get(r) == c else 0.8, 2)
                s.text(x + 13, ry(r) + 18, "".join(map(str, sorted(held[r][c]))), 9, "middle",
                       "#ffffff" if n == ranks else INK, mono=True)
        for r, c in sends.items():
            x = cx(col) + c * 29 + 13
            s.line(x, ry(r) + 29, x, ry(r) + 29 + (22 if r == ranks - 1 else 35), ORANGE, 1.5,
                   arrow=True)
            if r == ranks - 1:
                s.text(x, ry(r) + 62, "to 0", 10, "middle", ORANGE)
                s.line(x, ry(0) - 10, x, ry(0) - 1, ORANGE, 1.5, arrow=True)
        if col < len(steps):  # apply the step: in place is safe, no rank sends what it receives
            add = steps[col][0] == "reduce-scatter"
            for r, c in sends.items():
                to = held[(r + 1) % ranks]
                to[c] = (to[c] | held[r][c]) if add else set(held[r][c])
    s.text(30, 400, "Digits: the ranks whose numbers a chunk holds, summed; orange: the chunk "
           "the rank sends at this step. After 3 steps each rank owns one full sum,", 11,
           fill=MUTED)
    s.text(30, 416, "chunk (r + 1) mod 4; 3 more steps copy the sums round. Each rank sends "
           "2(N-1) = 6 chunks of 1/4 of the buffer: 2(N-1)/N of it.", 11, fill=MUTED)
    return s.render()


FIGURES = {
    "ch01_thread_hierarchy.svg": thread_hierarchy,
    "ch01_roofline.svg": roofline,
    "ch02_warp_butterfly.svg": warp_butterfly,
    "ch04_caching_allocator.svg": caching_allocator,
    "ch08_streams_timeline.svg": streams_timeline,
    "ch10_ring_allreduce.svg": ring_allreduce,
}


def broken_image_links():
    """Image links in the chapter READMEs and docs pages that point at no file."""
    bad = []
    for page in sorted(ROOT.glob("chapters/*/README.md")) + sorted(ROOT.glob("docs/*.md")):
        for m in IMAGE_LINK.finditer(page.read_text(encoding="utf-8")):
            target = page.parent / ((m.group(2) or "") + m.group(3))
            if not target.is_file():
                bad.append(f"{page.relative_to(ROOT)}: {target.name} not found")
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a figure is stale")
    args = parser.parse_args()
    stale = []
    for name, draw in FIGURES.items():
        path, svg = IMAGES / name, draw()
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != svg:
                stale.append(f"docs/images/{name} differs from what tools/make_figures.py draws")
        else:
            IMAGES.mkdir(parents=True, exist_ok=True)
            path.write_text(svg, encoding="utf-8")
            print(f"wrote docs/images/{name}")
    problems = stale + broken_image_links()
    for p in problems:
        print(p, file=sys.stderr)
    if stale:
        print("run tools/make_figures.py and commit docs/images/", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
