#!/usr/bin/env python3
"""Checks the library layering against cmake/layers.txt: configures the
source tree into a scratch directory with `cmake --graphviz`, reads the
target graph and fails, naming each problem, when a ringscope library links
something its line does not allow, when a ringscope library has no line, or
when the allowed edges form a cycle. `<linker-flags>` on a line allows raw
linker flags (TensorFlow's -L and -l).

    check_layers.py SOURCE_DIR SCRATCH_DIR [CMAKE]
"""

import pathlib
import re
import shutil
import subprocess
import sys


def read_layers(path):
    allowed = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, rest = line.partition(":")
        if not sep or not name.strip():
            sys.exit(f"{path}:{number}: expected 'library: dependency ...', got {line!r}")
        allowed[name.strip()] = set(rest.split())
    return allowed


def read_graph(dot):
    """{target: (kind, {dependency, ...})} from cmake --graphviz output."""
    names, kinds, edges = {}, {}, {}
    node = re.compile(r'^\s*"(node\d+)" \[ label = "([^"]+)", shape = (\w+)')
    edge = re.compile(r'^\s*"(node\d+)" -> "(node\d+)"')
    for line in dot.read_text().splitlines():
        if m := node.match(line):
            names[m.group(1)] = m.group(2)
            kinds[m.group(2)] = m.group(3)
        elif m := edge.match(line):
            edges.setdefault(m.group(1), set()).add(m.group(2))
    graph = {name: (kinds[name], set()) for name in kinds}
    for src, dsts in edges.items():
        graph[names[src]][1].update(names[d] for d in dsts)
    return graph


def cycle_in(allowed):
    state = {}

    def visit(name, path):
        if state.get(name) == "open":
            return path[path.index(name):] + [name]
        if state.get(name) == "done":
            return None
        state[name] = "open"
        for dep in sorted(allowed.get(name, ())):
            if dep in allowed and (found := visit(dep, path + [name])):
                return found
        state[name] = "done"
        return None

    for name in sorted(allowed):
        if found := visit(name, []):
            return found
    return None


def main():
    source, scratch = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    cmake = sys.argv[3] if len(sys.argv) > 3 else "cmake"
    allowed = read_layers(source / "cmake" / "layers.txt")
    problems = []
    if cycle := cycle_in(allowed):
        problems.append("cmake/layers.txt allows a cycle: " + " -> ".join(cycle))
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    dot = scratch / "targets.dot"
    run = subprocess.run([cmake, "-S", str(source), "-B", str(scratch / "build"),
                          f"--graphviz={dot}", "-DRINGSCOPE_BUILD_TESTS=OFF",
                          "-DRINGSCOPE_BUILD_BENCH=OFF"], capture_output=True, text=True)
    if run.returncode != 0 or not dot.exists():
        sys.exit(f"cmake configure failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    graph = read_graph(dot)
    libraries = {name for name, (kind, _) in graph.items()
                 if name.startswith("ringscope_") and kind != "egg"}
    for name in sorted(libraries - allowed.keys()):
        problems.append(f"{name} is a ringscope library with no line in cmake/layers.txt "
                        "(say what it may use)")
    checked = 0
    for name in sorted(libraries & allowed.keys()):
        for dep in sorted(graph[name][1]):
            checked += 1
            if dep.startswith("-") and "<linker-flags>" in allowed[name]:
                continue  # raw linker flags (TensorFlow's), allowed as such
            if dep not in allowed[name]:
                problems.append(f"{name} -> {dep} is not allowed by cmake/layers.txt "
                                f"({name} may use: {' '.join(sorted(allowed[name])) or 'nothing'})")
    shutil.rmtree(scratch, ignore_errors=True)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"layering: {len(libraries)} libraries, {checked} links, all allowed by cmake/layers.txt")


if __name__ == "__main__":
    main()
