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


# (file, title): one node at np=2 and 4, and the two hosts of
# scripts/two-hosts.sh with one rank each (TCP between them).
sweeps = [("allreduce_np2.json", "np=2"), ("allreduce_np4.json", "np=4"),
          ("two_hosts_allreduce_1+1.json", "two hosts, 1+1 ranks")]
for name, title in sweeps:
    d = load(name)
    if not d:
        continue
    print(f"\n#### Allreduce sweep, {title} (memcpy in the same run: {d['memcpy_gbps']:.1f} GB/s)\n")
    print("| size | ours is | MPI_Allreduce µs | ours µs | ringscope end-to-end µs | MPI algbw / busbw GB/s | "
          "ours algbw / busbw | end-to-end algbw / busbw | ours / MPI | end-to-end / MPI |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in d["rows"]:
        print(f"| {human(r['bytes'])} | {r['ours_algorithm'].replace('_', ' ')} | {r['mpi_us']:.1f} | "
              f"{r['ours_us']:.1f} | {r['runtime_us']:.1f} | "
              f"{r['mpi_algbw_gbps']:.2f} / {r['mpi_busbw_gbps']:.2f} | "
              f"{r['ours_algbw_gbps']:.2f} / {r['ours_busbw_gbps']:.2f} | "
              f"{r['runtime_algbw_gbps']:.2f} / {r['runtime_busbw_gbps']:.2f} | "
              f"**{r['ours_over_mpi']:.2f}** | {r['runtime_over_mpi']:.2f} |")

for np_ in (2, 4):
    d = load(f"allreduce_ring_np{np_}.json")
    if not d:
        continue
    print(f"\n#### The pipelined ring alone vs MPI_Allreduce, np={np_} "
          f"(memcpy in the same run: {d['memcpy_gbps']:.1f} GB/s)\n")
    print("| size | MPI_Allreduce µs | ring µs | MPI algbw / busbw GB/s | ring algbw / busbw | ring / MPI |")
    print("|---|---|---|---|---|---|")
    for r in d["rows"]:
        print(f"| {human(r['bytes'])} | {r['mpi_us']:.1f} | {r['ours_us']:.1f} | "
              f"{r['mpi_algbw_gbps']:.2f} / {r['mpi_busbw_gbps']:.2f} | "
              f"{r['ours_algbw_gbps']:.2f} / {r['ours_busbw_gbps']:.2f} | **{r['ours_over_mpi']:.2f}** |")

# The sweeps of one collective against its MPI peer: ring (or pairwise)
# alone and the whole runtime, interleaved in one run.
peer_sweeps = [
    ("reducescatter", "Reducescatter", "MPI_Reduce_scatter", "ring", "the whole tensor"),
    ("alltoall", "Alltoall", "MPI_Alltoall", "pairwise", "bytes sent per rank"),
]
for stem, label, peer, ours, size_is in peer_sweeps:
    for name, title in [(f"{stem}_np2.json", "np=2"), (f"{stem}_np4.json", "np=4"),
                        (f"two_hosts_{stem}_1+1.json", "two hosts, 1+1 ranks")]:
        d = load(name)
        if not d:
            continue
        print(f"\n#### {label} sweep, {title} (size = {size_is}; busbw = algbw × (n−1)/n)\n")
        print(f"| size | {peer} µs | {ours} µs | ringscope end-to-end µs | MPI busbw GB/s | "
              f"{ours} busbw | end-to-end busbw | {ours} / MPI | end-to-end / MPI |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in d["rows"]:
            print(f"| {human(r['bytes'])} | {r['mpi_us']:.1f} | {r['ours_us']:.1f} | "
                  f"{r['runtime_us']:.1f} | {r['mpi_busbw_gbps']:.2f} | "
                  f"{r['ours_busbw_gbps']:.2f} | {r['runtime_busbw_gbps']:.2f} | "
                  f"**{r['ours_over_mpi']:.2f}** | {r['runtime_over_mpi']:.2f} |")

negotiations = [("negotiation_np2.json", "np=2"), ("negotiation_np4.json", "np=4"),
                ("two_hosts_negotiation_1+1.json", "two hosts, 1+1 ranks")]
for name, title in negotiations:
    d = load(name)
    if not d:
        continue
    blocks = f" in {d['blocks']} alternating blocks" if "blocks" in d else " per phase"
    print(f"\n#### Fusion, cache and latency, {title} ({d['steps']} steps per side{blocks})\n")
    print("| measure | on | off | off / on |")
    print("|---|---|---|---|")
    print(f"| step of 200 × 16 KiB, fusion | {d['fusion_on_step_ms']:.2f} ms | "
          f"{d['fusion_off_step_ms']:.2f} ms | **{d['fusion_speedup']:.2f}** |")
    if "fusion_floor_mpi_ms" in d:
        print(f"| ... floor: one bare MPI_Allreduce of the 3.2 MiB (unfused / floor) | "
              f"{d['fusion_floor_mpi_ms']:.2f} ms | | {d['fusion_speedup_bound']:.2f} |")
    print(f"| negotiation per working cycle, response cache | {d['cache_on_negotiate_us']:.1f} µs | "
          f"{d['cache_off_negotiate_us']:.1f} µs | **{d['cache_speedup']:.2f}** |")
    if "cache_speedup_last_rank" in d:
        print(f"| ... on the rank that arrived last | {d['cache_on_negotiate_last_rank_us']:.1f} µs | "
              f"{d['cache_off_negotiate_last_rank_us']:.1f} µs | **{d['cache_speedup_last_rank']:.2f}** |")
    print(f"| step of 50 × 1 KiB, response cache | {d['cache_on_step_ms']:.2f} ms | "
          f"{d['cache_off_step_ms']:.2f} ms | {d['cache_off_step_ms'] / d['cache_on_step_ms']:.2f} |")
    print(f"| one 4 KiB allreduce, submit to callback (ringscope vs MPI_Allreduce) | "
          f"{d['latency_4k_runtime_us']:.1f} µs | {d['latency_4k_mpi_us']:.1f} µs | |")

for name, title in (("idle_cost_np2.json", "np=2"), ("idle_cost_np4.json", "np=4")):
    d = load(name)
    if not d:
        continue
    print(f"\n#### Idle cost, {title} ({d['blocks']} interleaved blocks per mode, medians, per rank)\n")
    print("| background | CPU, % of a core | context switches / s | compute kernel | vs nothing (paired blocks) |")
    print("|---|---|---|---|---|")
    for m in d["modes"]:
        print(f"| {m['mode']} | {m['cpu_percent']:.2f} | {m['switches_per_s']:.0f} | "
              f"{m['compute_ms']:.2f} ms | {m['compute_over_none']:.3f} |")

for name, title in (("join_np2.json", "np=2"), ("join_np4.json", "np=4"),
                    ("two_hosts_join_1+1.json", "two hosts, 1+1")):
    d = load(name)
    if not d:
        continue
    print(f"\n#### Join, {title}: steps of {d['tensors']} × {d['tensor_bytes'] // 1024} KiB, "
          f"{d['gap_ms']:g} ms between steps ({d['blocks']} interleaved blocks per mode, medians)\n")
    print("| mode | step of the ranks that train | vs all ranks, same cache setting (same block) | rank 0's runtime, % of a core |")
    print("|---|---|---|---|")
    for m in d["modes"]:
        print(f"| {m['mode']} | {m['step_ms']:.3f} ms | {m['vs_all_ranks']:.3f} | "
              f"{m['rank0_runtime_cpu_percent']:.1f} |")

layouts = [(f, load(f.name)) for f in sorted(results.glob("shared_layout_*.json"))]
if layouts:
    print("\n#### Shared-memory allreduce: result into the own region vs over what was read (2 processes)\n")
    print("| run | own region: in / combine / out / total µs | over what was read: in / combine / out / total µs | own / read |")
    print("|---|---|---|---|")
    for f, d in layouts:
        cells = []
        for layout in ("own", "read"):
            cells.append(" / ".join(f"{d[f'{layout}_{p}_us']:.1f}" for p in ("copy_in", "combine", "copy_out", "total")))
        print(f"| {f.stem.replace('shared_layout_', '')} ({d['pieces']} × {d['piece_bytes']} B) | "
              f"{cells[0]} | {cells[1]} | **{d['own_over_read']:.2f}** |")

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

d = load("tf_collectives_np2.json")
if d:
    print(f"\n#### TensorFlow collectives, np={d['ranks']} (bench/tf_collectives_bench.py, "
          f"medians of {d['rounds']} rounds)\n")
    print("| eager allreduce named | unnamed | growth named / unnamed | "
          f"{d['tensors']} tensors one by one | eager grouped | grouped in tf.function |")
    print("|---|---|---|---|---|---|")
    print(f"| {d['eager_named_us']:.0f} µs | {d['eager_unnamed_us']:.0f} µs | "
          f"{d['eager_named_growth_mb']:.1f} / {d['eager_unnamed_growth_mb']:.1f} MB | "
          f"{d['group_one_by_one_us']:.0f} µs | {d['group_eager_grouped_us']:.0f} µs | "
          f"{d['group_tf_function_us']:.0f} µs |")

d = load("whatif.json")
if d:
    print(f"\n#### What-if replay vs measured runs, np={d['np']} ({d['steps']} steps, "
          f"compute {d['compute_ms']} ms per step; bench/whatif_bench.sh)\n")
    for w in d["workloads"]:
        rec = w["recorded"]
        s = rec["settings"]
        fusion = "off" if s["fusion_threshold_bytes"] == 0 else f"{s['fusion_threshold_bytes'] >> 20} MiB"
        print(f"**{w['workload']}** — recorded at fusion {fusion}, cycle {s['cycle_time_ms']:g} ms, "
              f"cache {'on' if s['cache_enabled'] else 'off'}: {rec['median_bytes_per_second'] / 1e9:.3f} GB/s; "
              f"anchor ×{w['anchor']:.3f}; {w['grid_points']} settings predicted in {w['whatif_seconds']:.1f} s; "
              f"measured = median of {w.get('repeats', 1)} interleaved runs.\n")
        print("| fusion | cycle | cache | predicted GB/s | raw | measured GB/s | runs max/min | error |")
        print("|---|---|---|---|---|---|---|---|")
        for r in w["rows"]:
            f = "off" if r["fusion_mb"] == 0 else f"{r['fusion_mb']} MiB"
            print(f"| {f} | {r['cycle_ms']:g} ms | {r['cache']} | {r['predicted_bps'] / 1e9:.3f} | "
                  f"{r['raw_bps'] / 1e9:.3f} | {r['measured_bps'] / 1e9:.3f} | "
                  f"{r.get('measured_spread', 1):.2f} | {100 * r['rel_error']:+.1f}% |")
        print(f"\nMedian |error| **{100 * w['median_abs_rel_error']:.1f}%** "
              f"(raw, without the anchor: {100 * w['median_abs_rel_error_raw']:.1f}%)"
              + (f"; median max/min over repeated runs of one setting: {w['median_run_spread']:.2f}"
                 if "median_run_spread" in w else "") + ".\n")

for name in ("autotune_loop_small.json", "autotune_loop_small_replay.json"):
    d = load(name)
    if not d:
        continue
    replay = "replay" in name
    print(f"\n#### Autotuning loop, workload {d['workload']}, np={d['np']}"
          f"{' (tuner with --with-replay)' if replay else ''} (`{d['command']}`)\n")
    print("| trial | fusion | cycle | cache | GB/s | ± MAD | step ms |")
    print("|---|---|---|---|---|---|---|")
    for i, r in enumerate(d["loop"]):
        s = r["settings"]
        f = "off" if s["fusion_threshold_bytes"] == 0 else f"{s['fusion_threshold_bytes'] / 1048576:g} MiB"
        print(f"| {i} | {f} | {s['cycle_time_ms']:g} ms | {'on' if s['cache_enabled'] else 'off'} | "
              f"{r['bps'] / 1e9:.3f} | {r['mad'] / 1e9:.3f} | {r['step_ms']:.2f} |")
    line = (f"\nBest of loop {d['best_loop']['bps'] / 1e9:.3f} GB/s = **{d['best_vs_start']:.2f}×** the start; "
            f"first ≥ 1.3× at trial count **{d['trials_to_1_3x']}**")
    if d.get("best_grid"):
        g = d["best_grid"]
        line += (f"; grid best {g['bps'] / 1e9:.3f} GB/s (fusion {g['fusion_mb']} MiB, cycle {g['cycle_ms']:g} ms); "
                 f"loop best / grid best **{d['best_loop_vs_best_grid']:.3f}**")
    print(line + ".")
    if d.get("grid"):
        cycles = sorted({r["cycle_ms"] for r in d["grid"]})
        print("\nGrid (GB/s, cache on):\n")
        print("| fusion | " + " | ".join(f"{c:g} ms" for c in cycles) + " |")
        print("|---|" + "---|" * len(cycles))
        for mb in sorted({r["fusion_mb"] for r in d["grid"]}):
            cells = {r["cycle_ms"]: r["bps"] for r in d["grid"] if r["fusion_mb"] == mb}
            print(f"| {'off' if mb == 0 else f'{mb} MiB'} | "
                  + " | ".join(f"{cells[c] / 1e9:.3f}" if c in cells else "" for c in cycles) + " |")
    c = d.get("confirm")
    if c:
        m = {k: v["median_bps"] / 1e9 for k, v in c["confirm"].items()}
        print(f"\nConfirm (interleaved, median of {len(next(iter(c['confirm'].values()))['runs'])} runs each, GB/s): "
              f"start {m['start']:.3f}, defaults {m['defaults']:.3f}, tuned {m['tuned']:.3f}, "
              + (f"grid best {m['grid_best']:.3f}; " if d.get("best_grid") else "")
              + f"tuned/start **{c['tuned_vs_start']:.2f}×**, tuned/defaults {c['tuned_vs_defaults']:.2f}×"
              + (f", tuned/grid best **{c['tuned_vs_grid_best']:.2f}×**." if d.get("best_grid")
                 else " (no grid in this session)."))
