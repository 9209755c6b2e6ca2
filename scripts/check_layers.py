#!/usr/bin/env python3
"""Checks that voxstream's layers form a DAG: no file includes a header of a higher layer.

The layers, lowest first (docs/architecture.md):

    core < memory < exec < volume < ops < io < profile < dist < tools

A file may include headers of its own layer or of lower ones. A file's layer comes from its path:

    include/voxstream/<layer>/...        <layer>
    src/<layer>/...                      <layer>   (private code, src/<layer>/detail/ included)
    include/voxstream/volume.hpp,
    include/voxstream/volume/..., src/volume.cu        volume
    include/voxstream/config.hpp(.in)    core      (generated backend configuration)
    src/detail/...                       core      (private helpers every layer may use; they
                                                    include nothing above core)
    tools/...                            tools
    include/voxstream/voxstream.hpp      exempt    (the umbrella header includes everything)

Includes are read textually (every #include line, whatever #if guards it): <voxstream/...> names
a public header; "..." is resolved against the including file's folder. Other includes (system,
Thrust, CUDA, third-party) are not layered.

Prints each violation as `file:line: <layer> includes <header> of higher layer <layer>` and
exits 1 if there is any; exits 0 otherwise. Usage: scripts/check_layers.py [repository root]
"""

import os
import re
import sys

LAYERS = ["core", "memory", "exec", "volume", "ops", "io", "profile", "dist", "tools"]
RANK = {name: i for i, name in enumerate(LAYERS)}
SCANNED = ["include/voxstream", "src", "tools"]
SUFFIXES = (".hpp", ".h", ".cuh", ".cpp", ".cu", ".hpp.in")
EXEMPT = {"include/voxstream/voxstream.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(rel):
    """The layer of a repository-relative path (with '/' separators), or None if unlayered."""
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) >= 3 and parts[1] == "voxstream":
        if len(parts) == 3:
            stem = parts[2].split(".")[0]
            if stem == "volume":
                return "volume"
            if stem == "config":
                return "core"
            return None
        return parts[2] if parts[2] in RANK else None
    if parts[0] == "src":
        if len(parts) == 2:
            return "volume" if parts[1].split(".")[0] == "volume" else None
        if parts[1] == "detail":
            return "core"
        return parts[1] if parts[1] in RANK else None
    if parts[0] == "tools":
        return "tools"
    return None


def resolve(root, including, kind, name):
    """Repository-relative path of an included file, or None if it is not one of ours."""
    if kind == "<":
        return "include/" + name if name.startswith("voxstream/") else None
    path = os.path.normpath(os.path.join(os.path.dirname(including), name)).replace(os.sep, "/")
    if os.path.isfile(os.path.join(root, path)) or path.startswith(("src/", "include/", "tools/")):
        return path
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    violations = 0
    checked = 0
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for fname in sorted(filenames):
                if not fname.endswith(SUFFIXES):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fname), root).replace(os.sep, "/")
                if rel in EXEMPT:
                    continue
                own = layer_of(rel)
                if own is None:
                    print(f"{rel}: error: no layer for this path (see scripts/check_layers.py)")
                    violations += 1
                    continue
                checked += 1
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = resolve(root, rel, m.group(1), m.group(2))
                        if target is None:
                            continue
                        if target in EXEMPT:
                            if own != "tools":
                                print(f"{rel}:{lineno}: {own} includes {m.group(2)}, the umbrella "
                                      f"header, which only tools may include")
                                violations += 1
                            continue
                        theirs = layer_of(target)
                        if theirs is not None and RANK[theirs] > RANK[own]:
                            print(f"{rel}:{lineno}: {own} includes {m.group(2)} of higher layer "
                                  f"{theirs}")
                            violations += 1
    if violations:
        print(f"check_layers: {violations} violation(s) in {checked} files "
              f"(order: {' < '.join(LAYERS)})", file=sys.stderr)
        return 1
    print(f"check_layers: {checked} files, no upward include ({' < '.join(LAYERS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
