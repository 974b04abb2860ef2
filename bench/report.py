#!/usr/bin/env python3
"""Renders the tables of docs/performance.md from the measured results in
bench/results/ (bench/run_all.sh and the benches' --json write them), so the
document quotes measured numbers only and cannot drift from them.

    python3 bench/report.py [RESULTS_DIR]             print every table
    python3 bench/report.py --update docs/performance.md
    python3 bench/report.py --check docs/performance.md
    --results DIR    where the results are (default: bench/results beside
                     this script; the positional RESULTS_DIR is the same)

A generated block in the document is everything between a line
`<!-- report:NAME -->` and the next `<!-- /report -->`; NAME is one of the
blocks registered below (`--list` prints them). --update rewrites every block
from the results; --check exits 1 and names each block that differs from
them (or whose results are missing, or whose name is unknown), and changes
nothing.
"""

import argparse
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
results = HERE / "results"


class Missing(Exception):
    """A block's results file is not in the results directory."""


def load(name):
    path = results / name
    return json.loads(path.read_text()) if path.exists() else None


def need(name):
    d = load(name)
    if d is None:
        raise Missing(name)
    return d


def need_lines(name):
    """A JSON-lines file: one result per line."""
    path = results / name
    if not path.exists():
        raise Missing(name)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def human(b):
    if b >= 1 << 30:
        return f"{b >> 30} GiB"
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def met(ok):
    return "**met**" if ok else "**not met**"


def span(values, fmt="{:.2f}"):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


BLOCKS = {}


def block(name):
    def register(fn):
        BLOCKS[name] = fn
        return fn
    return register


# ---------------------------------------------------------------- allreduce

# One node at np=2 and 4, and the two hosts of scripts/two-hosts.sh with one
# rank each (TCP between them).
ALLREDUCE = {"allreduce_np2": ("allreduce_np2.json", "np=2"),
             "allreduce_np4": ("allreduce_np4.json", "np=4 (4 processes on 2 cores)"),
             "allreduce_two_hosts": ("two_hosts_allreduce_1+1.json", "two hosts, 1+1 ranks")}


def allreduce_table(name, title):
    d = need(name)
    out = [f"`{name}`, {title}; memcpy in the same run {d['memcpy_gbps']:.1f} GB/s.", "",
           "| size | ours is | MPI_Allreduce µs | ours µs | ringscope end-to-end µs | MPI algbw / busbw GB/s | "
           "ours algbw / busbw | end-to-end algbw / busbw | ours / MPI | end-to-end / MPI |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        out.append(f"| {human(r['bytes'])} | {r['ours_algorithm'].replace('_', ' ')} | {r['mpi_us']:.1f} | "
                   f"{r['ours_us']:.1f} | {r['runtime_us']:.1f} | "
                   f"{r['mpi_algbw_gbps']:.2f} / {r['mpi_busbw_gbps']:.2f} | "
                   f"{r['ours_algbw_gbps']:.2f} / {r['ours_busbw_gbps']:.2f} | "
                   f"{r['runtime_algbw_gbps']:.2f} / {r['runtime_busbw_gbps']:.2f} | "
                   f"**{r['ours_over_mpi']:.2f}** | {r['runtime_over_mpi']:.2f} |")
    return out


for _block, (_file, _title) in ALLREDUCE.items():
    block(_block)(lambda f=_file, t=_title: allreduce_table(f, t))


@block("allreduce_goal")
def allreduce_goal():
    out = ["| sweep | ours / MPI, lowest at 4–64 KiB (goal ≥ 0.9) | lowest from 1 MiB (goal ≥ 1.0) | "
           "lowest over the sweep | end-to-end / MPI, lowest from 1 MiB | goal |",
           "|---|---|---|---|---|---|"]
    for key, goal in (("allreduce_np2", True), ("allreduce_np4", True), ("allreduce_two_hosts", False)):
        name, title = ALLREDUCE[key]
        rows = need(name)["rows"]
        small = min(r["ours_over_mpi"] for r in rows if r["bytes"] <= 65536)
        large = min(r["ours_over_mpi"] for r in rows if r["bytes"] >= 1 << 20)
        every = min(r["ours_over_mpi"] for r in rows)
        e2e = min(r["runtime_over_mpi"] for r in rows if r["bytes"] >= 1 << 20)
        verdict = met(small >= 0.9 and large >= 1.0) if goal else "none set"
        out.append(f"| {title.split(' (')[0]} | {small:.2f} | {large:.2f} | {every:.2f} | {e2e:.2f} | {verdict} |")
    return out


@block("ring")
def ring():
    runs = [need(f"allreduce_ring_np{n}.json") for n in (2, 4)]
    out = [f"`allreduce_ring_np2.json` (memcpy in the same run {runs[0]['memcpy_gbps']:.1f} GB/s) and "
           f"`allreduce_ring_np4.json` ({runs[1]['memcpy_gbps']:.1f} GB/s).", "",
           "| size | np=2: MPI_Allreduce µs | ring µs | ring busbw GB/s | ring / MPI | "
           "np=4: MPI_Allreduce µs | ring µs | ring busbw GB/s | ring / MPI |",
           "|---|---|---|---|---|---|---|---|---|"]
    for a, b in zip(runs[0]["rows"], runs[1]["rows"]):
        cells = [f"{r['mpi_us']:.1f} | {r['ours_us']:.1f} | {r['ours_busbw_gbps']:.2f} | **{r['ours_over_mpi']:.2f}**"
                 for r in (a, b)]
        out.append(f"| {human(a['bytes'])} | {cells[0]} | {cells[1]} |")
    return out


@block("slow_period")
def slow_period():
    normal, slow = need("allreduce_np2.json"), need("allreduce_np2_slow_period.json")
    nn, ns = need("negotiation_np2.json"), need("negotiation_np2_slow_period.json")
    out = ["| np=2, normal period / slow period (`*_slow_period.json`) | MPI | ringscope |", "|---|---|---|",
           f"| one bare `MPI_Allreduce` of 3.2 MiB; the fused 200 × 16 KiB step | "
           f"{nn['fusion_floor_mpi_ms']:.2f} / {ns['fusion_floor_mpi_ms']:.2f} ms | "
           f"{nn['fusion_on_step_ms']:.2f} / {ns['fusion_on_step_ms']:.2f} ms |",
           f"| one 4 KiB allreduce, submit to callback | {nn['latency_4k_mpi_us']:.1f} / "
           f"{ns['latency_4k_mpi_us']:.1f} µs | {nn['latency_4k_runtime_us']:.1f} / {ns['latency_4k_runtime_us']:.1f} µs |"]
    for a, b in zip(normal["rows"], slow["rows"]):
        if a["bytes"] == 1 << 20:
            out.append(f"| allreduce sweep, {human(a['bytes'])} | {a['mpi_us']:.1f} / {b['mpi_us']:.1f} µs | "
                       f"{a['ours_us']:.1f} / {b['ours_us']:.1f} µs |")
    return out


# ------------------------------------------------------- negotiation, fusion

NEGOTIATIONS = [("negotiation_np2.json", "np=2"), ("negotiation_np4.json", "np=4"),
                ("two_hosts_negotiation_1+1.json", "two hosts, 1+1")]


@block("negotiation")
def negotiation():
    runs = [(need(f), t) for f, t in NEGOTIATIONS]
    d0 = runs[0][0]
    out = [f"{d0['steps']} steps per side in {d0['blocks']} alternating blocks; median step of the slowest rank.",
           "", "| measure | " + " | ".join(t for _, t in runs) + " |", "|---|" + "---|" * len(runs)]

    def row(label, cell):
        out.append(f"| {label} | " + " | ".join(cell(d) for d, _ in runs) + " |")

    row("step of 200 × 16 KiB, fused / unfused",
        lambda d: f"{d['fusion_on_step_ms']:.3f} / {d['fusion_off_step_ms']:.3f} ms")
    row("fusion: unfused ÷ fused", lambda d: f"**{d['fusion_speedup']:.2f}**")
    row("one bare `MPI_Allreduce` of the 3.2 MiB (the floor)", lambda d: f"{d['fusion_floor_mpi_ms']:.3f} ms")
    row("bound on fusion: unfused ÷ floor", lambda d: f"{d['fusion_speedup_bound']:.2f}")
    row("negotiation per working cycle, cache on / off, mean over ranks",
        lambda d: f"{d['cache_on_negotiate_us']:.1f} / {d['cache_off_negotiate_us']:.1f} µs")
    row("cache: off ÷ on, mean over ranks", lambda d: f"**{d['cache_speedup']:.2f}**")
    row("... on the rank that arrived last, on / off",
        lambda d: f"{d['cache_on_negotiate_last_rank_us']:.1f} / {d['cache_off_negotiate_last_rank_us']:.1f} µs")
    row("cache: off ÷ on, rank that arrived last", lambda d: f"**{d['cache_speedup_last_rank']:.2f}**")
    row("step of 50 × 1 KiB, cache on / off", lambda d: f"{d['cache_on_step_ms']:.3f} / {d['cache_off_step_ms']:.3f} ms")
    row("one 4 KiB allreduce, submit to callback: ringscope / `MPI_Allreduce`",
        lambda d: f"{d['latency_4k_runtime_us']:.1f} / {d['latency_4k_mpi_us']:.1f} µs")
    fusion = [d["fusion_speedup"] for d, _ in runs]
    cache = [min(d["cache_speedup"], d["cache_speedup_last_rank"]) for d, _ in runs]
    need_us = 1000 * d0["fusion_off_step_ms"] / 5
    out += ["", f"Goals: a fused step ≥ 5× faster than the unfused one — {met(min(fusion) >= 5)} "
            f"({', '.join(f'{x:.2f}×' for x in fusion)}); at np=2, 5× would need a fused step of "
            f"{need_us:.0f} µs. The response cache ≥ 2× cheaper per cycle — {met(min(cache) >= 2)} "
            f"(lowest of both measures: {', '.join(f'{x:.2f}×' for x in cache)})."]
    return out


@block("idle_cost")
def idle_cost():
    runs = [need(f"idle_cost_np{n}.json") for n in (2, 4)]
    out = [f"{runs[0]['blocks']} interleaved blocks per mode, medians, per rank.", "",
           "| background | np=2: CPU, % of a core | context switches / s | compute kernel vs nothing | "
           "np=4: CPU, % of a core | context switches / s | compute kernel vs nothing |",
           "|---|---|---|---|---|---|---|"]
    for a, b in zip(runs[0]["modes"], runs[1]["modes"]):
        cells = [f"{m['cpu_percent']:.2f} | {m['switches_per_s']:.0f} | {m['compute_over_none']:.3f}" for m in (a, b)]
        out.append(f"| {a['mode']} | {cells[0]} | {cells[1]} |")
    return out


@block("join")
def join():
    runs = [(need("join_np2.json"), "np=2"), (need("join_np4.json"), "np=4"),
            (need("two_hosts_join_1+1.json"), "two hosts 1+1")]
    d0 = runs[0][0]
    out = [f"Steps of {d0['tensors']} × {d0['tensor_bytes'] // 1024} KiB, {d0['gap_ms']:g} ms between steps, "
           f"{d0['blocks']} interleaved blocks per mode; the step of the slowest training rank (median), "
           "its ratio to every rank training with the same cache setting, and rank 0's runtime threads in % of a core.",
           "", "| mode | " + " | ".join(f"{t}: step | vs all ranks | rank 0, %" for _, t in runs) + " |",
           "|---|" + "---|---|---|" * len(runs)]
    for i, m in enumerate(d0["modes"]):
        cells = []
        for d, _ in runs:
            x = d["modes"][i]
            cells.append(f"{x['step_ms']:.3f} ms | {x['vs_all_ranks']:.3f} | {x['rank0_runtime_cpu_percent']:.0f}")
        out.append(f"| {m['mode']} | " + " | ".join(cells) + " |")
    return out


# The sweeps of one collective against its MPI peer: ring (or pairwise)
# alone and the whole runtime, interleaved in one run.
def peer_sweep(stem, peer, ours):
    runs = [(need(f"{stem}_np2.json"), "np=2"), (need(f"{stem}_np4.json"), "np=4"),
            (need(f"two_hosts_{stem}_1+1.json"), "two hosts 1+1")]
    out = ["| size | " + " | ".join(f"{t}: {peer} µs | {ours} / MPI | end-to-end / MPI" for _, t in runs) + " |",
           "|---|" + "---|---|---|" * len(runs)]
    for i, r in enumerate(runs[0][0]["rows"]):
        cells = []
        for d, _ in runs:
            x = d["rows"][i]
            cells.append(f"{x['mpi_us']:.1f} | **{x['ours_over_mpi']:.2f}** | {x['runtime_over_mpi']:.2f}")
        out.append(f"| {human(r['bytes'])} | " + " | ".join(cells) + " |")
    return out


block("reducescatter")(lambda: peer_sweep("reducescatter", "MPI_Reduce_scatter", "ring"))
block("alltoall")(lambda: peer_sweep("alltoall", "MPI_Alltoall", "pairwise"))


@block("shared_layout")
def shared_layout():
    layouts = [(f, json.loads(f.read_text())) for f in sorted(results.glob("shared_layout_*.json"))]
    if not layouts:
        raise Missing("shared_layout_*.json")
    out = ["| file | own region: in / combine / out / total µs | over what was read: in / combine / out / total µs | "
           "own / read |",
           "|---|---|---|---|"]
    for f, d in layouts:
        cells = []
        for layout in ("own", "read"):
            cells.append(" / ".join(f"{d[f'{layout}_{p}_us']:.1f}" for p in ("copy_in", "combine", "copy_out", "total")))
        out.append(f"| `{f.name}` ({d['pieces']} × {d['piece_bytes']} B) | {cells[0]} | {cells[1]} | "
                   f"**{d['own_over_read']:.2f}** |")
    return out


# -------------------------------------------------------------------- trace

@block("trace_overhead")
def trace_overhead():
    d = need("trace_overhead_np2.json")
    return ["| tracing off, median step | tracing on | throughput on / off | events per rank per step | dropped |",
            "|---|---|---|---|---|",
            f"| {d['step_ms_off']:.2f} ms | {d['step_ms_on']:.2f} ms | **{d['throughput_on_over_off']:.3f}** | "
            f"{d['events_per_rank_step']:.0f} | {d['dropped']} |"]


@block("trace_writer")
def trace_writer():
    d = need("trace_writer.json")
    return [f"| record() p50 | record() p99 | writer into SQLite | close() | bytes/event, per-rank file | "
            "bytes/event, merged | merge | dropped |",
            "|---|---|---|---|---|---|---|---|",
            f"| {d['record_p50_ns']:.1f} ns | {d['record_p99_ns']:.1f} ns | "
            f"{d['writer_events_per_s'] / 1e6:.2f} M events/s | {d['close_s']:.2f} s | "
            f"{d['bytes_per_event_rank_file']:.1f} B | {d['bytes_per_event_merged']:.1f} B | "
            f"{d['merge_events_per_s'] / 1e6:.2f} M events/s | {d['dropped']} |"]


# --------------------------------------------------------------- TensorFlow

@block("tf_synthetic")
def tf_synthetic():
    rows = []
    for np_ in (1, 2):
        for traced in ("off", "on"):
            p = results / f"tf_synthetic_np{np_}_trace_{traced}.txt"
            if not p.exists():
                raise Missing(p.name)
            for line in p.read_text().splitlines():
                if "images/s per rank" in line:
                    rows.append((np_, traced, " ".join(line.split("<stdout>:")[-1].split())))
    return ["| np | tracing | result |", "|---|---|---|"] + [f"| {n} | {t} | {line} |" for n, t, line in rows]


@block("tf_resnet50")
def tf_resnet50():
    """ResNet-50 at np=2, tracing off and on, launches interleaved."""
    rows, ratios = [], []
    for i in (1, 2, 3):
        rate = {}
        for traced in ("off", "on"):
            p = results / f"tf_resnet50_np2_trace_{traced}_{i}.txt"
            if not p.exists():
                raise Missing(p.name)
            for line in p.read_text().splitlines():
                if "images/s per rank" in line:
                    rate[traced] = float(line.split("total:")[1].split()[0])
        if len(rate) != 2:
            raise Missing(f"tf_resnet50_np2 pair {i}: no images/s line")
        ratios.append(rate["on"] / rate["off"])
        rows.append(f"| {i} | {rate['off']:.1f} | {rate['on']:.1f} | {ratios[-1]:.3f} |")
    ratios.sort()
    return (["| pair | images/s, tracing off | tracing on | on / off |", "|---|---|---|---|"] + rows +
            [f"| median | | | {ratios[1]:.3f} |"])


@block("flight_overhead")
def flight_overhead():
    d = need("flight_overhead_np2.json")
    rows = ["| workload, np=2 | recorder off | on (16 MiB) | throughput on / off, median of pairs | pairs' range |",
            "|---|---|---|---|---|"]
    names = {"cpp_step_ms": ("C++ runtime, fused 200 × 16 KiB step", "ms"),
             "digits_samples_per_s": ("digits Keras training", "samples/s")}
    for key, (label, unit) in names.items():
        if f"{key}_median_ratio" not in d:
            continue
        r = d[f"{key}_throughput_ratios"]
        fmt = ".3f" if unit == "ms" else ".0f"
        rows.append(f"| {label} | {d[f'{key}_off_median']:{fmt}} {unit} | {d[f'{key}_on_median']:{fmt}} {unit} | "
                    f"{d[f'{key}_median_ratio']:.3f} ({len(r)} pairs) | {min(r):.3f}–{max(r):.3f} |")
    return rows


@block("flight_record")
def flight_record():
    d = need("flight_record.json")
    return ["| budget | events held | record() | its time read + record() | median of |",
            "|---|---|---|---|---|",
            f"| {d['budget_mib']:.0f} MiB | {d['events_held']:,} | {d['record_ns']:.1f} ns | "
            f"{d['now_and_record_ns']:.1f} ns | {d['runs']} runs of {d['events_per_run']:,} events |"]


@block("flight_dump")
def flight_dump():
    d = need("flight_dump_np1.json")
    return ["| budget | events held | a busy rank's rate | window | dump (median of 3) | file |",
            "|---|---|---|---|---|---|",
            f"| {d['budget_bytes'] >> 20} MiB | {d['events_in_dump']:,} | {d['events_per_s'] / 1e3:.0f} k events/s | "
            f"{d['window_s']:.2f} s | {d['dump_median_s']:.2f} s | {d['file_bytes'] / 1e6:.1f} MB |"]


@block("flight_memory")
def flight_memory():
    d = need("flight_memory.json")
    mib = 1 << 20
    return [f"{d['steps']:,} steps × {d['tensors']} allreduces ({d['ops']:,} ops, one new name a step), "
            f"{d['on']['recorded_events']:,} events recorded into a ring of {d['on']['capacity_events']:,}.",
            "",
            "| | recorder off | on |", "|---|---|---|",
            f"| RSS after warm-up | {d['off']['rss_start_bytes'] / mib:.1f} MiB | {d['on']['rss_start_bytes'] / mib:.1f} MiB |",
            f"| RSS at the end | {d['off']['rss_end_bytes'] / mib:.1f} MiB | {d['on']['rss_end_bytes'] / mib:.1f} MiB |",
            f"| the recorder's own count at the end | | {d['on']['held_bytes'] / mib:.1f} MiB ({d['held_over_budget']:.3f} × budget) |",
            f"| RSS difference at the end | | {d['rss_difference_bytes'] / mib:.1f} MiB ({d['rss_difference_over_budget']:.3f} × budget) |"]


@block("flight_sigterm")
def flight_sigterm():
    d = need("flight_sigterm_np1.json")
    rows = ["| run | sigterm dump written | SIGTERM to mpirun's exit | events in the dump |", "|---|---|---|---|"]
    for i, r in enumerate(d["runs"], 1):
        rows.append(f"| {i} | {'yes' if r['dumped'] else '**no**'} | {r['seconds_to_exit']:.2f} s | {r['events_in_dump']:,} |")
    return rows


@block("tf_collectives")
def tf_collectives():
    d = need("tf_collectives_np2.json")
    return [f"np={d['ranks']}, medians of {d['rounds']} rounds of {d['calls']:,} calls.", "",
            "| eager allreduce, named | unnamed | process growth, named / unnamed | "
            f"{d['tensors']} × {d['elements'] * 4 // 1024} KiB one by one | eager `grouped_allreduce` | "
            "grouped in a `tf.function` |",
            "|---|---|---|---|---|---|",
            f"| {d['eager_named_us']:.0f} µs | {d['eager_unnamed_us']:.0f} µs | "
            f"{d['eager_named_growth_mb']:.1f} / {d['eager_unnamed_growth_mb']:.1f} MB | "
            f"{d['group_one_by_one_us']:.0f} µs | {d['group_eager_grouped_us']:.0f} µs | "
            f"{d['group_tf_function_us']:.0f} µs |"]


@block("tf_aggregation")
def tf_aggregation():
    d = need("tf_aggregation_np2.json")
    rows = [f"np={d['ranks']}, {d['layers']} × Dense({d['width']}) "
            f"({d['gradient_bytes'] / 1e6:.1f} MB of gradients), micro-batch {d['micro_batch']}, "
            f"{d['rounds']} rounds of an epoch each, interleaved.", "",
            "| `backward_passes_per_step` | samples/s, median | per round |", "|---|---|---|"]
    for p in (1, 4):
        runs = ", ".join(f"{v:.0f}" for v in d[f"samples_per_s_passes_{p}"])
        rows.append(f"| {p} | {d[f'median_passes_{p}']:.0f} | {runs} |")
    rows += ["", f"4 against 1: median ratio **{d['median_ratio']:.2f}** (per round "
             f"{span(d['ratios'])}); goal ≥ 1: {met(d['median_ratio'] >= 1)}."]
    return rows


@block("process_sets")
def process_sets():
    d = need("process_sets.json")
    rows = [f"{d['launches']} interleaved launches of each, each the median of {d['rounds']} "
            "rounds; a world of 2 beside an idle job of 2 ranks, against a set of 2 in a world "
            "of 4; two disjoint sets of 2 (np=4) each alone and at once.", "",
            "| allreduce | world of 2 | set of 2 | set / world (launches) | a set alone | "
            "both sets at once | overlap (launches) |", "|---|---|---|---|---|---|---|"]
    for z in d["sizes"]:
        rows.append(f"| {z['label']} | {z['world_us']:.1f} µs | {z['set_us']:.1f} µs | "
                    f"**{z['median_set_over_world']:.2f}** ({span(z['set_over_world'])}) | "
                    f"{z['alone_us']:.1f} µs | {z['both_us']:.1f} µs | "
                    f"**{z['median_overlap']:.2f}** ({span(z['overlap'])}) |")
    return rows


@block("tf_path")
def tf_path():
    runs = {n: need(f"tf_path_np{n}.json") for n in (1, 2)}
    first = runs[1]["new"]

    def cell(d, key):
        v = d.get(key) if d else None
        return "—" if v is None else f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} µs"

    def per_tensor(d, key):
        v = d.get(key.replace("_us", "_overhead_per_tensor_us")) if d else None
        return "" if v is None else f" (+{v:.1f} µs/tensor)"

    n, kib = first["tensors"], first["tensor_bytes"] // 1024
    rows = [
        (f"C++ runtime, step of {n} × {kib} KiB", "cpp_step_us", "", ""),
        ("eager `grouped_allreduce`", "grouped_eager_us", "≤ 0.6 ms", "≤ 1.0 ms"),
        (f"{n} `allreduce` in one `tf.function`", "function_ops_us", "≤ 0.6 ms", "≤ 1.0 ms"),
        (f"TF floor: {n} negatives in one `tf.function`", "tf_floor_function_us", "", ""),
        ("`DistributedGradientTape`, eager (allreduce part)", "tape_allreduce_eager_us",
         "≤ 0.6 ms", "≤ 1.0 ms"),
        ("`DistributedGradientTape`, `tf.function` (allreduce part)",
         "tape_allreduce_function_us", "≤ 0.6 ms", "≤ 1.0 ms"),
        ("the ranks meeting once after that tape (one 4 B `allreduce`)",
         "tape_meet_function_us", "", ""),
        ("one 4 KiB `allreduce`, eager", "eager_one_4k_us", "≤ 20 µs", ""),
        ("C++ runtime, one 4 KiB allreduce", "cpp_one_4k_us", "", ""),
        ("TF floor: one eager op on 4 KiB", "tf_floor_eager_op_us", "", ""),
    ]
    launches = runs[1]["launches"]
    out = [f"Medians of {launches} interleaved launches, each the median of "
           f"{runs[1]['steps']} steps of the slowest rank; \"before\" is "
           f"{runs[1].get('old_label', 'another build')}'s op library and Python package "
           "(same machine, same launches).", "",
           "| path | np=1 | np=1 before | np=2 | np=2 before | goal np=1 / np=2 |",
           "|---|---|---|---|---|---|"]
    for label, key, g1, g2 in rows:
        goal = f"{g1} / {g2}" if g2 else g1
        out.append(f"| {label} | {cell(runs[1]['new'], key)}{per_tensor(runs[1]['new'], key)} | "
                   f"{cell(runs[1].get('old'), key)} | "
                   f"{cell(runs[2]['new'], key)}{per_tensor(runs[2]['new'], key)} | "
                   f"{cell(runs[2].get('old'), key)} | {goal} |")
    return out


@block("tf_path_breakdown")
def tf_path_breakdown():
    runs = {n: need(f"tf_path_np{n}.json")["new"] for n in (1, 2)}

    def diff(d, a, b=None, c=None):
        if any(k and d.get(k) is None for k in (a, b, c)):
            return None
        return d[a] - (d[b] if b else 0) - (d[c] if c else 0)

    n = runs[1]["tensors"]
    parts = [
        ("one 4 KiB allreduce, eager", None),
        ("ringscope's Python (`hvd.allreduce` less the op called alone)",
         lambda d: diff(d, "eager_one_4k_us", "raw_op_one_4k_us")),
        ("TensorFlow's eager dispatch of a trivial op (floor)",
         lambda d: d["tf_floor_eager_op_us"]),
        ("TensorFlow's async-op extra: the op alone less the runtime's op and the floor",
         lambda d: diff(d, "raw_op_one_4k_us", "cpp_one_4k_us", "tf_floor_eager_op_us")),
        ("the runtime: submit, hand-off, wake-up, cycle, completion (C++ one op)",
         lambda d: d["cpp_one_4k_us"]),
        (f"{n} × 16 KiB, eager `grouped_allreduce`", None),
        ("ringscope's Python (`grouped_allreduce` less the grouped op alone)",
         lambda d: diff(d, "grouped_eager_us", "raw_grouped_us")),
        (f"TensorFlow's eager dispatch of one op of {n} inputs and outputs (IdentityN, floor)",
         lambda d: d.get("tf_floor_grouped_eager_us")),
        ("the kernel: the grouped op alone less that floor and the C++ step",
         lambda d: diff(d, "raw_grouped_us", "cpp_step_us", "tf_floor_grouped_eager_us")),
        ("the runtime's step (C++, the tensors submitted together)",
         lambda d: d["cpp_step_us"]),
        (f"{n} `allreduce` in one `tf.function`", None),
        (f"TensorFlow's floor: {n} trivial ops in one `tf.function`",
         lambda d: d["tf_floor_function_us"]),
        ("ours over that floor", lambda d: diff(d, "function_ops_us", "tf_floor_function_us")),
    ]

    def cell(v):
        return "" if v is None else f"{v:.0f} µs"

    out = ["| where the time goes | np=1 | np=2 |", "|---|---|---|"]
    for label, fn in parts:
        if fn is None:
            out.append(f"| **{label}** | | |")
        else:
            out.append(f"| {label} | {cell(fn(runs[1]))} | {cell(fn(runs[2]))} |")
    return out


# ------------------------------------------------------------------- viewer

@block("viewer")
def viewer():
    d = need("viewer_bench.json")
    views = [("full", "fit all"), ("mid", "mid zoom (1/40)"), ("deep", "deep zoom (200 µs)"), ("panning", "panning")]
    slowest = max(d[f"{v}_max_ms"] for v, _ in views)
    out = [f"{d['events']:,} events, {d['ranks']} ranks, {d['span_ns'] / 1e9:.1f} s of trace, 1600×900, "
           f"{d['frames_per_view']} frames per view, load average {d['load_average_start']:g}→"
           f"{d['load_average_end']:g}.", "",
           "| view | median | p99 | slowest | UI median |", "|---|---|---|---|---|"]
    for v, label in views:
        out.append(f"| {label} | {d[f'{v}_median_ms']:.1f} ms | {d[f'{v}_p99_ms']:.1f} ms | "
                   f"{d[f'{v}_max_ms']:.1f} ms | {d[f'{v}_ui_median_ms']:.2f} ms |")
    out += ["", f"Goals: load ≤ 5 s — {d['load_s']:.2f} s, {met(d['load_s'] <= 5)}; resident memory ≤ 40 B per "
            f"event — {d['rss_bytes_per_event']:.1f} B (track columns {d['column_bytes_per_event']:.1f} B), "
            f"{met(d['rss_bytes_per_event'] <= 40)}; every frame ≤ 16 ms — slowest {slowest:.1f} ms, "
            f"{met(slowest <= 16)}."]
    return out


# ---------------------------------------------------------------- autotuner

def fusion_label(mb):
    return "off" if mb == 0 else f"{mb:g} MiB"


@block("whatif")
def whatif():
    d = need("whatif.json")
    out = []
    rows = []
    for w in d["workloads"]:
        rec = w["recorded"]
        s = rec["settings"]
        out += ([""] if out else []) + [f"**{w['workload']}** (np={d['np']}, {d['steps']} steps, compute {d['compute_ms']} ms a step): recorded at fusion {fusion_label(s['fusion_threshold_bytes'] >> 20)}, "
                f"cycle {s['cycle_time_ms']:g} ms, cache {'on' if s['cache_enabled'] else 'off'}, "
                f"{rec['median_bytes_per_second'] / 1e9:.3f} GB/s; anchor ×{w['anchor']:.3f}; {w['grid_points']} "
                f"settings predicted in {w['whatif_seconds']:.1f} s; each measured setting the median of "
                f"{w.get('repeats', 1)} interleaved runs. Median |error| **{100 * w['median_abs_rel_error']:.1f}%** "
                f"(without the anchor {100 * w['median_abs_rel_error_raw']:.1f}%)"
                + (f", median max/min of one setting's runs {w['median_run_spread']:.2f}"
                   if "median_run_spread" in w else "")
                + f"; goal ≤ 15%: {met(w['median_abs_rel_error'] <= 0.15)}."]
        for r in w["rows"]:
            rows.append(f"| {w['workload']} | {fusion_label(r['fusion_mb'])} | {r['cycle_ms']:g} ms | {r['cache']} | "
                        f"{r['predicted_bps'] / 1e9:.3f} | {r['raw_bps'] / 1e9:.3f} | {r['measured_bps'] / 1e9:.3f} | "
                        f"{r.get('measured_spread', 1):.2f} | {100 * r['rel_error']:+.1f}% |")
    return out + ["", "| workload | fusion | cycle | cache | predicted GB/s | raw | measured GB/s | runs max/min | "
                  "error |", "|---|---|---|---|---|---|---|---|---|"] + rows


def loop_summary(d):
    line = (f"Best of the loop {d['best_loop']['bps'] / 1e9:.3f} GB/s = **{d['best_vs_start']:.2f}×** the start; "
            f"first ≥ 1.3× at trial count **{d['trials_to_1_3x']}**")
    if d.get("best_grid"):
        g = d["best_grid"]
        line += (f"; grid best {g['bps'] / 1e9:.3f} GB/s (fusion {fusion_label(g['fusion_mb'])}, cycle "
                 f"{g['cycle_ms']:g} ms); loop best / grid best **{d['best_loop_vs_best_grid']:.3f}**")
    out = [line + "."]
    c = d.get("confirm")
    if c:
        m = {k: v["median_bps"] / 1e9 for k, v in c["confirm"].items()}
        runs = len(next(iter(c["confirm"].values()))["runs"])
        out += ["", f"Confirm (interleaved, median of {runs} runs each, GB/s): start {m['start']:.3f}, defaults "
                f"{m['defaults']:.3f}, tuned {m['tuned']:.3f}"
                + (f", grid best {m['grid_best']:.3f}" if d.get("best_grid") else "")
                + f"; tuned/start **{c['tuned_vs_start']:.2f}×**, tuned/defaults {c['tuned_vs_defaults']:.2f}×"
                + (f", tuned/grid best **{c['tuned_vs_grid_best']:.2f}×**" if d.get("best_grid") else "") + "."]
    return out


@block("autotune_loop")
def autotune_loop():
    d = need("autotune_loop_small.json")
    out = [f"Workload {d['workload']}, np={d['np']}, {d['steps']} steps per run, compute {d['compute_ms']} ms per "
           f"step (`{d['command']}`).", "",
           "| trial | fusion | cycle | cache | GB/s | ± MAD | step ms |", "|---|---|---|---|---|---|---|"]
    for i, r in enumerate(d["loop"]):
        s = r["settings"]
        out.append(f"| {i} | {fusion_label(s['fusion_threshold_bytes'] / 1048576)} | {s['cycle_time_ms']:g} ms | "
                   f"{'on' if s['cache_enabled'] else 'off'} | {r['bps'] / 1e9:.3f} | {r['mad'] / 1e9:.3f} | "
                   f"{r['step_ms']:.2f} |")
    out += [""] + loop_summary(d)
    ok = d["trials_to_1_3x"] <= 8 and d.get("best_loop_vs_best_grid") and d["best_loop_vs_best_grid"] >= 0.95
    out[-1] += f" Goal (≥ 1.3× the start within 8 traced runs, within 5% of the grid's best): {met(bool(ok))}."
    return out


@block("autotune_grid")
def autotune_grid():
    d = need("autotune_loop_small.json")
    if not d.get("grid"):
        raise Missing("autotune_loop_small.json (its grid)")
    cycles = sorted({r["cycle_ms"] for r in d["grid"]})
    out = ["Grid (GB/s, cache on):", "",
           "| fusion | " + " | ".join(f"{c:g} ms" for c in cycles) + " |", "|---|" + "---|" * len(cycles)]
    for mb in sorted({r["fusion_mb"] for r in d["grid"]}):
        cells = {r["cycle_ms"]: r["bps"] for r in d["grid"] if r["fusion_mb"] == mb}
        out.append(f"| {fusion_label(mb)} | "
                   + " | ".join(f"{cells[c] / 1e9:.3f}" if c in cells else "" for c in cycles) + " |")
    return out


@block("autotune_loop_replay")
def autotune_loop_replay():
    d = need("autotune_loop_small_replay.json")
    summary = loop_summary(d)
    return [f"`{d['command']}` (the tuner with `--with-replay`, no grid). " + summary[0]] + summary[1:]


@block("online_autotune")
def online_autotune():
    d = need("online_autotune_small.json")
    p = d["provenance"]
    trials = {t["id"]: t for t in p["trials"]}
    default = trials[p["default_trial"]]["median_bytes_per_second"]

    def row(label, t):
        s = t["settings"]
        return (f"| {label} (trial {t['id']}) | {fusion_label(s['fusion_threshold_bytes'] >> 20)}, "
                f"{s['cycle_time_ms']:g} ms, cache {'on' if s['cache_enabled'] else 'off'} | "
                f"{t['median_bytes_per_second'] / 1e6:.1f} MB/s | {t['median_bytes_per_second'] / default:.2f}× |")

    out = ["| trial | settings | median throughput | vs the defaults |", "|---|---|---|---|",
           row("the start", trials[0]), row("the runtime's defaults", trials[p["default_trial"]]),
           row("the choice", trials[p["chosen_trial"]])]
    chosen = trials[p["chosen_trial"]]["settings"]
    again = [t for t in p["trials"] if t["settings"] == chosen and t["id"] != p["chosen_trial"]]
    if again:
        out.append(f"| the same settings in trials {', '.join(str(t['id']) for t in again)} | | "
                   + ", ".join(f"{t['median_bytes_per_second'] / 1e6:.1f}" for t in again) + " MB/s | "
                   + span([t["median_bytes_per_second"] / default for t in again]) + "× |")
    out += ["", f"{len(p['trials'])} trials (stop reason: {p['stop_reason']}); the settings file's "
            f"`measured_gain_vs_default_percent`: {p['measured_gain_vs_default_percent']:+.0f}%."]
    return out


# --------------------------------------------------------------- elsewhere

@block("gpu")
def gpu():
    d = need("gpu_bench_h200.json")
    out = [f"`gpu_bench_h200.json` ({d['device']}).", "",
           "| bytes | copy kernel GB/s | scaled copy kernel (×0.5) GB/s | `cudaMemcpyAsync` GB/s | copy / memcpy | "
           "scaled / memcpy |", "|---:|---:|---:|---:|---:|---:|"]
    plain = {c["bytes"]: c for c in d["copies"] if c["name"] == "copy kernel"}
    scaled = {c["bytes"]: c for c in d["copies"] if c["name"] == "scaled copy kernel"}
    for b, c in plain.items():
        s = scaled[b]
        out.append(f"| {human(b)} | {c['ours_gbs']:.1f} | {s['ours_gbs']:.1f} | {c['cudamemcpy_gbs']:.1f} | "
                   f"{c['ours_gbs'] / c['cudamemcpy_gbs']:.2f} | {s['ours_gbs'] / s['cudamemcpy_gbs']:.2f} |")
    for c in d["copies"]:
        if c["name"] not in ("copy kernel", "scaled copy kernel"):
            out.append(f"| {c['name'].replace(' x ', ' × ')}: one launch vs 64 memcpys, {human(c['bytes'])} | "
                       f"{c['ours_gbs']:.1f} | | {c['cudamemcpy_gbs']:.1f} | **{c['ours_gbs'] / c['cudamemcpy_gbs']:.1f}** | |")
    out += ["", "| np=1 | ringscope µs | bare NCCL µs | one NCCL call for the whole burst µs |", "|---|---:|---:|---:|"]
    for r in d["allreduce_latency"]:
        size = f"{r['bytes']} B" if r["bytes"] < 1024 else human(r["bytes"])
        out.append(f"| one allreduce of {size} | {r['ringscope_us']:.1f} | {r['bare_nccl_us']:.1f} | |")
    for b in d["bursts"]:
        out.append(f"| burst of {b['tensors']} × {human(b['bytes_each'])} (NCCL: one call per tensor) | "
                   f"{b['ringscope_us']:.1f} | {b['nccl_per_tensor_us']:.1f} | {b['one_nccl_call_us']:.1f} |")
    return out


@block("sixteen_cores")
def sixteen_cores():
    neg = need_lines("sixteen-cores/negotiation.jsonl")
    sweeps = need_lines("sixteen-cores/allreduce.jsonl")
    out = ["| `negotiation.jsonl`: world, data threads per rank | runs | fused step | unfused | fusion | bare `MPI_Allreduce` of 3.2 MiB | "
           "cache, off ÷ on | 4 KiB allreduce |",
           "|---|---|---|---|---|---|---|---|"]
    for np_ in sorted({d["np"] for d in neg}):
        for threads in sorted({d["data_threads"] for d in neg}, reverse=True):
            rs = [d for d in neg if d["np"] == np_ and d["data_threads"] == threads]
            if rs:
                out.append(f"| np={np_}, {threads} | {len(rs)} | {span([d['fusion_on_step_ms'] for d in rs])} ms | "
                           f"{span([d['fusion_off_step_ms'] for d in rs])} ms | "
                           f"**{span([d['fusion_speedup'] for d in rs])}** | "
                           f"{span([d['fusion_floor_mpi_ms'] for d in rs])} ms | "
                           f"{span([d['cache_speedup'] for d in rs], '{:.1f}')} | "
                           f"{span([d['latency_4k_runtime_us'] for d in rs], '{:.0f}')} µs |")
    sizes = [r["bytes"] for r in sweeps[0]["rows"]]
    out += ["", "| `allreduce.jsonl`, ours / MPI (end-to-end / MPI): world, data threads | " + " | ".join(human(b) for b in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for d in sweeps:
        out.append(f"| np={d['np']}, {d['data_threads']} | "
                   + " | ".join(f"{r['ours_over_mpi']:.2f} ({r['runtime_over_mpi']:.2f})" for r in d["rows"]) + " |")
    return out


# ---------------------------------------------------------------- Horovod

# Horovod's side, from shared/reference/horovod-facts.md ("Measured on these
# machines", np=2); ringscope's from the results of the same world size.
@block("horovod")
def horovod():
    n, a = need("negotiation_np2.json"), need("allreduce_np2.json")
    t = need("trace_overhead_np2.json")
    loop = need("autotune_loop_small.json")
    r16 = next(r for r in a["rows"] if r["bytes"] == 16 << 20)
    return ["| np=2 | Horovod | ringscope | ringscope's source |", "|---|---|---|---|",
            f"| one 4 KiB allreduce, submit to result | ~1.1 ms (waits for the 1 ms cycle) | "
            f"{n['latency_4k_runtime_us']:.1f} µs | `negotiation_np2.json` |",
            f"| 16 MiB through the framework / plain MPI in the same run | 3.6 / 6.7 GB/s (0.54×) | "
            f"{r16['runtime_algbw_gbps']:.2f} / {r16['mpi_algbw_gbps']:.2f} GB/s "
            f"({r16['runtime_over_mpi']:.2f}×) | `allreduce_np2.json` |",
            f"| step of 200 × 16 KiB, fused / unfused | 2.2–3.2 / 4.9–5.4 ms | "
            f"{n['fusion_on_step_ms']:.2f} / {n['fusion_off_step_ms']:.2f} ms | `negotiation_np2.json` |",
            f"| tracing on: throughput | ~3.6× slower | {t['throughput_on_over_off']:.3f}× of tracing off | "
            "`trace_overhead_np2.json` |",
            f"| events missing from the trace | ~57% (its queue is not drained at shutdown) | {t['dropped']} dropped "
            "(the writer drains at close; `ringscope-trace check` counts drops) | `trace_overhead_np2.json` |",
            f"| autotuning: runs before a useful setting | ~200 steps to a first log row, ~4,400 to finish; "
            f"no faster than its defaults | ≥ 1.3× the start at traced run {loop['trials_to_1_3x']} "
            f"({loop['steps']} steps a run), "
            f"{loop['best_vs_start']:.2f}× by the loop's best | `autotune_loop_small.json` |"]


# -------------------------------------------------------------------- main

BLOCK_RE = re.compile(r"^<!-- report:(\S+) -->$")
END = "<!-- /report -->"


def render(name):
    return "\n".join(BLOCKS[name]())


def rewrite(text):
    """Returns the document with every block rendered again, and the list of
    problems (block name and what is wrong with it)."""
    lines = text.split("\n")
    out, problems, i = [], [], 0
    while i < len(lines):
        out.append(lines[i])
        m = BLOCK_RE.match(lines[i].strip())
        i += 1
        if not m:
            continue
        name = m.group(1)
        try:
            end = next(j for j in range(i, len(lines)) if lines[j].strip() == END or BLOCK_RE.match(lines[j].strip()))
        except StopIteration:
            end = None
        if end is None or lines[end].strip() != END:
            problems.append((name, f"no {END} after its start marker"))
            continue
        old = "\n".join(lines[i:end]).strip("\n")
        if name not in BLOCKS:
            problems.append((name, "unknown block (python3 bench/report.py --list)"))
            new = old
        else:
            try:
                new = render(name)
            except Missing as e:
                problems.append((name, f"{results / str(e)} is missing"))
                new = old
            else:
                if new != old:
                    problems.append((name, "differs from the results"))
        out += [new, lines[end]] if new else [lines[end]]
        i = end + 1
    return "\n".join(out), problems


def main():
    global results
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir", nargs="?", help="results directory (same as --results)")
    ap.add_argument("--results", help=f"results directory (default {results})")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--update", metavar="DOC", help="rewrite every generated block of DOC")
    group.add_argument("--check", metavar="DOC", help="exit 1 if a generated block of DOC differs")
    group.add_argument("--list", action="store_true", help="print the block names")
    args = ap.parse_args()
    if args.results or args.results_dir:
        results = pathlib.Path(args.results or args.results_dir)
    if args.list:
        print("\n".join(BLOCKS))
        return 0
    if args.update or args.check:
        path = pathlib.Path(args.update or args.check)
        text = path.read_text()
        new, problems = rewrite(text)
        if args.update:
            unwritable = [(n, p) for n, p in problems if p != "differs from the results"]
            if new != text:
                path.write_text(new)
            for name, problem in unwritable:
                print(f"{path}: block {name}: {problem}", file=sys.stderr)
            changed = [n for n, p in problems if p == "differs from the results"]
            print(f"{path}: {len(changed)} block(s) rewritten" + (f" ({', '.join(changed)})" if changed else ""))
            return 1 if unwritable else 0
        for name, problem in problems:
            print(f"{path}: block {name}: {problem}", file=sys.stderr)
        if problems:
            print(f"{path}: {len(problems)} generated block(s) do not match {results} (see above)",
                  file=sys.stderr)
            return 1
        blocks = sum(1 for line in text.split("\n") if BLOCK_RE.match(line.strip()))
        print(f"{path}: {blocks} generated blocks match {results}")
        return 0
    for name in BLOCKS:  # no document: print every table
        try:
            body = render(name)
        except Missing:
            continue
        print(f"\n#### {name}\n\n{body}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
