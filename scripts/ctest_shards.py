#!/usr/bin/env python3
"""Runs a build's ctest suite with its GoogleTest cases batched, many to a process.

    python3 scripts/ctest_shards.py BUILD_DIR [-j N] [-R REGEX] [-E REGEX] [--timeout S]
    python3 scripts/ctest_shards.py --self-test

ctest starts one process per GoogleTest case (gtest_discover_tests), and on the CUDA backend
each process makes its own CUDA context: on a 16-core H100 machine `ctest -j 8` over the ~1150
tests took 270 s, the median case 1.38 s. This script asks ctest for the suite (`ctest -N
--show-only=json-v1`), runs the GoogleTest cases of each binary in batches (one process per
batch, `--gtest_filter` naming the batch's cases, N processes at a time), and then hands to
ctest, by test number, every case that failed, crashed or timed out in its batch, so that each
runs alone as ctest would run it, together with the tests that are not GoogleTest cases
(samples, the package test, scripts).
A test counts as failed only if it fails there, alone: the verdicts are ctest's. Cases that
failed in a batch but passed alone are listed, since they depend on running in a fresh process.

-R and -E select tests by name as ctest's options do (Python's regular expressions): only those
matching -R, none matching -E. The last lines have ctest's form ("N% tests passed, F tests failed out of T" and, if any failed,
"The following tests FAILED:" with one "<number> - <name> (Failed)" line each), so that
scripts/gpu_check.sh's summary reads them as it reads ctest's. Exit status: 0 if every test
passed (or skipped itself), 1 if one failed, 2 on a usage or ctest error.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

RESULT = re.compile(r"^\[\s+(OK|FAILED|SKIPPED)\s+\] ([^\s,]+)")


def suite(build):
    r = subprocess.run(["ctest", "--test-dir", build, "-N", "--show-only=json-v1"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        raise SystemExit(2)
    return json.loads(r.stdout)["tests"]


# Test properties a batch honours (the working directory; a skip is read from the output; a
# batch has a time limit of its own; DEF_SOURCE_LINE, which gtest_discover_tests adds from
# CMake 3.30 on, only says where the case is defined). A case with any other (ENVIRONMENT,
# RUN_SERIAL, ...) runs alone through ctest.
BATCHABLE = {"WORKING_DIRECTORY", "SKIP_REGULAR_EXPRESSION", "LABELS", "TIMEOUT",
             "DEF_SOURCE_LINE"}


def why_alone(test):
    """A short reason why a test is not batched (for the summary)."""
    props = sorted(p["name"] for p in test.get("properties", []) if p["name"] not in BATCHABLE)
    if props:
        return "property " + ",".join(props)
    cmd = test.get("command") or []
    cmd = launch_script_command(list(cmd)) or cmd
    if not any(a.startswith("--gtest_filter") for a in cmd):
        return "not a GoogleTest case (e.g. " + " ".join(cmd[:4])[:300] + ")"
    return "not one case, or its binary is missing (e.g. " + " ".join(cmd[:4])[:300] + ")"


def launch_script_command(cmd):
    """The command that CMake's GoogleTest/LaunchTest.cmake would run, or None: from CMake 4.x
    on, gtest_discover_tests registers every case as `cmake -D TEST_EXECUTABLE=... -D
    TEST_EXECUTOR=... -D TEST_FILTER=Suite.Case -D TEST_XML_OUTPUT=... -D TEST_EXTRA_ARGS=...
    -P .../LaunchTest.cmake` (seen with CMake 4.4.3 on the GPU machine). Only the plain form
    is taken: no executor and no XML output."""
    if len(cmd) < 3 or cmd[-2] != "-P" or not cmd[-1].endswith("LaunchTest.cmake"):
        return None
    defs = {}
    i = 1
    while i < len(cmd) - 2:
        if cmd[i] == "-D" and "=" in cmd[i + 1]:
            k, v = cmd[i + 1].split("=", 1)
            defs[k] = v
            i += 2
        elif cmd[i].startswith("-D") and "=" in cmd[i]:
            k, v = cmd[i][2:].split("=", 1)
            defs[k] = v
            i += 1
        else:
            return None
    if defs.get("TEST_EXECUTOR") or defs.get("TEST_XML_OUTPUT"):
        return None
    if not defs.get("TEST_EXECUTABLE") or not defs.get("TEST_FILTER"):
        return None
    extra = [a for a in defs.get("TEST_EXTRA_ARGS", "").split(";") if a]
    return [defs["TEST_EXECUTABLE"], "--gtest_filter=" + defs["TEST_FILTER"]] + extra


def ctest_failed(out):
    """Names of the tests under ctest's "The following tests FAILED:" (a skipped test is also
    listed, under "The following tests did not run:", and is not a failure)."""
    part = out.split("The following tests FAILED:", 1)
    part = part[1] if len(part) == 2 else ""
    return {name for _, name in re.findall(r"^\s+(\d+) - (.+?) \(", part, flags=re.M)}


def self_test():
    """Checks the parsers on the forms seen from ctest 3.25 and 4.4 (CI runs this)."""
    out = ("The following tests did not run:\n\t585 - A.Skipped<int> (Skipped)\n\n"
           "The following tests FAILED:\n\t544 - B.Fails<unsigned char> (Failed)\n"
           "\t600 - C.NotRun (Not Run)\nErrors while running CTest\n")
    assert ctest_failed(out) == {"B.Fails<unsigned char>", "C.NotRun"}, ctest_failed(out)
    assert ctest_failed("100% tests passed, 0 tests failed out of 3\n") == set()
    exe = os.path.abspath(sys.executable)  # any existing file stands for the test binary
    props = [{"name": "WORKING_DIRECTORY", "value": "/w"},
             {"name": "SKIP_REGULAR_EXPRESSION", "value": ["x"]},
             {"name": "DEF_SOURCE_LINE", "value": "t.cu:1"}]
    new = {"command": ["/c/cmake", "-D", "TEST_EXECUTABLE=" + exe, "-D", "TEST_EXECUTOR=",
                       "-D", "TEST_FILTER=F/0.Case", "-D", "TEST_XML_OUTPUT=", "-D",
                       "TEST_EXTRA_ARGS=--a;--b", "-P", "/c/GoogleTest/LaunchTest.cmake"],
           "properties": props}
    assert gtest_case(new) == (exe, "/w", "F/0.Case", ["--a", "--b"]), gtest_case(new)
    old = {"command": [exe, "--gtest_filter=S.Case", "--gtest_also_run_disabled_tests"],
           "properties": props[:2]}
    assert gtest_case(old) == (exe, "/w", "S.Case", ["--gtest_also_run_disabled_tests"])
    wrapped = dict(new, command=new["command"][:4] + ["-D", "TEST_EXECUTOR=valgrind"] +
                   new["command"][6:])
    assert gtest_case(wrapped) is None  # an executor: alone through ctest
    env = dict(old, properties=props + [{"name": "ENVIRONMENT", "value": ["A=1"]}])
    assert gtest_case(env) is None and why_alone(env) == "property ENVIRONMENT"
    print("ctest_shards: self-test passed")
    return 0


def gtest_case(test):
    """(binary, working directory, filter, other arguments) of a discovered GoogleTest case
    that can run in a batch, else None."""
    if any(p["name"] not in BATCHABLE for p in test.get("properties", [])):
        return None
    cmd = list(test.get("command") or [])
    cmd = launch_script_command(cmd) or cmd
    # "--gtest_filter=Suite.Case", or the filter as the next argument.
    for i, a in enumerate(cmd[:-1]):
        if a == "--gtest_filter":
            cmd[i:i + 2] = ["--gtest_filter=" + cmd[i + 1]]
            break
    filters = [a for a in cmd if a.startswith("--gtest_filter=")]
    if len(cmd) < 2 or len(filters) != 1 or not os.path.isfile(cmd[0]):
        return None
    flt = filters[0][len("--gtest_filter="):]
    if any(c in flt for c in "*?:") or flt.startswith("-"):
        return None  # not one case
    wd = next((p["value"] for p in test.get("properties", []) if p["name"] == "WORKING_DIRECTORY"),
              os.path.dirname(cmd[0]))
    return cmd[0], wd, flt, [a for a in cmd[1:] if a != filters[0]]


def run_batch(binary, wd, extra, names, timeout):
    """Runs one batch; returns ({name: 'OK'|'FAILED'|'SKIPPED'}, seconds, output tail)."""
    t0 = time.monotonic()
    cmd = [binary, "--gtest_filter=" + ":".join(names)] + extra
    try:
        r = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
        out = r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        # What the batch printed before it was stopped (bytes, whatever `text` says).
        got = e.stdout or b""
        out = got.decode(errors="replace") if isinstance(got, bytes) else got
        out += "\n(batch timed out)"
    seen = {}
    for line in out.splitlines():
        m = RESULT.match(line)
        if m and m.group(2) in names and m.group(2) not in seen:
            seen[m.group(2)] = m.group(1)
    return seen, time.monotonic() - t0, out[-2000:]


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2, help="processes at a time")
    ap.add_argument("-R", dest="include", default=None, help="only tests matching this")
    ap.add_argument("-E", dest="exclude", default=None, help="leave out tests matching this")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds a batch may run; its cases without a result then run alone")
    ap.add_argument("--batches-per-job", type=int, default=4,
                    help="batches per process slot and binary (load balance against start-up)")
    a = ap.parse_args()
    t_start = time.monotonic()
    jobs = max(1, a.j)
    include = re.compile(a.include) if a.include else None
    exclude = re.compile(a.exclude) if a.exclude else None

    tests = suite(a.build)
    number = {t["name"]: i + 1 for i, t in enumerate(tests)}  # ctest's test numbers
    by_binary = {}  # (binary, wd, extra args) -> [(filter, name)]
    others = []
    why = {}  # reason a test runs alone -> count
    for t in tests:
        if include is not None and not include.search(t["name"]):
            continue
        if exclude is not None and exclude.search(t["name"]):
            continue
        g = gtest_case(t)
        if g is None:
            others.append(t["name"])
            reason = why_alone(t)
            why[reason] = why.get(reason, 0) + 1
        else:
            by_binary.setdefault((g[0], g[1], tuple(g[3])), []).append((g[2], t["name"]))

    batches = []
    for key, cases in by_binary.items():
        n = max(1, min(len(cases), jobs * a.batches_per_job))
        for k in range(n):
            part = cases[k::n]
            if part:
                batches.append((key, part))
    # Largest binaries' batches first.
    batches.sort(key=lambda b: -len(b[1]))

    verdict = {}  # ctest name -> OK / FAILED / SKIPPED / None (no result)
    notes = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = [(b, pool.submit(run_batch, b[0][0], b[0][1], list(b[0][2]),
                                [f for f, _ in b[1]], a.timeout)) for b in batches]
        for (key, part), fut in futs:
            seen, secs, tail = fut.result()
            missing = 0
            for f, name in part:
                verdict[name] = seen.get(f)
                missing += f not in seen
            if missing:
                notes.append(f"{os.path.basename(key[0])}: {missing} of {len(part)} cases of a "
                             f"batch gave no result (crash or time-out); output's end:\n{tail}")
    batched = len(verdict)
    ok = sum(v == "OK" for v in verdict.values())
    skipped = sum(v == "SKIPPED" for v in verdict.values())
    again = sorted((n for n, v in verdict.items() if v not in ("OK", "SKIPPED")),
                   key=lambda n: number[n])
    print(f"ctest_shards: {batched} GoogleTest cases in {len(batches)} batches, {jobs} at a "
          f"time: {ok} passed, {skipped} skipped, {len(again)} to re-run alone "
          f"({time.monotonic() - t_start:.0f} s)")
    for reason, count in sorted(why.items(), key=lambda kv: -kv[1]):
        print(f"ctest_shards: {count} tests run alone: {reason}")
    for n in notes:
        print(n)

    # ctest: the re-runs and every test that is not a GoogleTest case, by number.
    alone = again + others
    failed = []
    passed_alone = []
    if alone:
        nums = sorted(number[n] for n in alone)
        print(f"ctest_shards: ctest runs {len(alone)} tests alone ({len(again)} re-runs, "
              f"{len(others)} not GoogleTest cases)", flush=True)
        log = os.path.join(a.build, "Testing", "ctest_shards_rerun.log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        r = subprocess.run(["ctest", "--test-dir", a.build, "-j", str(jobs),
                            "--output-on-failure", "-O", log,
                            "-I", "0,0,0," + ",".join(map(str, nums))],
                           capture_output=True, text=True, errors="replace")
        # Its output indented, and its own summary lines reworded, so that only this script's
        # last lines read as a ctest summary.
        inner = r.stdout[-20000:].replace("% tests passed, ", "% of these passed, ")
        inner = inner.replace("The following tests FAILED:", "Of these, failed:")
        sys.stdout.write("".join("  | " + line for line in inner.splitlines(True)))
        failed_names = ctest_failed(r.stdout)
        # A test ctest could not run at all also counts as failed.
        if r.returncode != 0 and not failed_names:
            failed_names = set(alone)
        failed = sorted(failed_names, key=lambda n: number.get(n, 0))
        passed_alone = [n for n in again if n not in failed_names]
    if passed_alone:
        print(f"ctest_shards: {len(passed_alone)} failed in a batch but passed alone "
              "(they depend on a fresh process):")
        for n in passed_alone:
            print(f"\t{number[n]} - {n}")

    total = batched + len(others)
    pct = 100 if total == 0 else int(100 * (total - len(failed)) / total)
    print(f"\n{pct}% tests passed, {len(failed)} tests failed out of {total}")
    print(f"Total Test time (real) = {time.monotonic() - t_start:.2f} sec")
    if failed:
        print("\nThe following tests FAILED:")
        for n in failed:
            print(f"\t{number.get(n, 0)} - {n} (Failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
