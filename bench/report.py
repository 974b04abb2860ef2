#!/usr/bin/env python3
"""Prints the markdown tables of docs/performance.md from bench/results/*.json
(written by bench/run_all.sh), so the document quotes measured numbers only."""

import json
import pathlib
import sys

results = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")


def load(name):
    path = results / name
    return json.loads(path.read_text()) if path.exists() else None


def human(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


for np_ in (2, 4):
    d = load(f"allreduce_np{np_}.json")
    if not d:
        continue
    print(f"\n#### Allreduce sweep, np={np_} (memcpy in the same run: {d['memcpy_gbps']:.1f} GB/s)\n")
    print("| size | MPI_Allreduce µs | ours µs | ringscope end-to-end µs | MPI busbw GB/s | ours busbw | "
          "end-to-end busbw | ours / MPI | end-to-end / MPI |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in d["rows"]:
        print(f"| {human(r['bytes'])} | {r['mpi_us']:.1f} | {r['ring_us']:.1f} | {r['runtime_us']:.1f} | "
              f"{r['mpi_busbw_gbps']:.2f} | {r['ring_busbw_gbps']:.2f} | {r['runtime_busbw_gbps']:.2f} | "
              f"**{r['ring_over_mpi']:.2f}** | {r['runtime_over_mpi']:.2f} |")

for np_ in (2, 4):
    d = load(f"negotiation_np{np_}.json")
    if not d:
        continue
    print(f"\n#### Fusion, cache and latency, np={np_} ({d['steps']} steps per phase)\n")
    print("| measure | on | off | off / on |")
    print("|---|---|---|---|")
    print(f"| step of 200 × 16 KiB, fusion | {d['fusion_on_step_ms']:.2f} ms | "
          f"{d['fusion_off_step_ms']:.2f} ms | **{d['fusion_speedup']:.2f}** |")
    print(f"| negotiation per working cycle, response cache | {d['cache_on_negotiate_us']:.1f} µs | "
          f"{d['cache_off_negotiate_us']:.1f} µs | **{d['cache_speedup']:.2f}** |")
    print(f"| step of 50 × 1 KiB, response cache | {d['cache_on_step_ms']:.2f} ms | "
          f"{d['cache_off_step_ms']:.2f} ms | {d['cache_off_step_ms'] / d['cache_on_step_ms']:.2f} |")
    print(f"| one 4 KiB allreduce, submit to callback (ringscope vs MPI_Allreduce) | "
          f"{d['latency_4k_runtime_us']:.1f} µs | {d['latency_4k_mpi_us']:.1f} µs | |")

d = load("trace_overhead_np2.json")
if d:
    print("\n#### Tracing end to end, np=2, synthetic ResNet-50 gradients\n")
    print("| tracing off, median step | tracing on | throughput on / off | events per rank per step | dropped |")
    print("|---|---|---|---|---|")
    print(f"| {d['step_ms_off']:.2f} ms | {d['step_ms_on']:.2f} ms | **{d['throughput_on_over_off']:.3f}** | "
          f"{d['events_per_rank_step']:.0f} | {d['dropped']} |")

d = load("trace_writer.json")
if d:
    print(f"\n#### Trace writer ({d['events']:,} events of the runtime's mix)\n")
    print("| record() p50 | record() p99 | writer into SQLite | bytes/event, per-rank file | "
          "bytes/event, merged | merge |")
    print("|---|---|---|---|---|---|")
    print(f"| {d['record_p50_ns']:.1f} ns | {d['record_p99_ns']:.1f} ns | "
          f"{d['writer_events_per_s'] / 1e6:.2f} M events/s | {d['bytes_per_event_rank_file']:.1f} B | "
          f"{d['bytes_per_event_merged']:.1f} B | {d['merge_events_per_s'] / 1e6:.2f} M events/s |")

rows = []
for np_ in (1, 2):
    for traced in ("off", "on"):
        p = results / f"tf_synthetic_np{np_}_trace_{traced}.txt"
        if p.exists():
            for line in p.read_text().splitlines():
                if "images/s per rank" in line:
                    rows.append((np_, traced, line.split("<stdout>:")[-1].strip()))
if rows:
    print("\n#### TensorFlow synthetic benchmark (resnet20, 32×32, batch 32 per rank)\n")
    print("| np | tracing | result |")
    print("|---|---|---|")
    for np_, traced, line in rows:
        print(f"| {np_} | {traced} | {line} |")
