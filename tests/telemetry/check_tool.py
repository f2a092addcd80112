#!/usr/bin/env python3
# tests/telemetry/check_tool.py - drives the real nwb-telemetry binary and checks what it
# writes with Python's own json module (an independent, real JSON parser, made strict: NaN,
# Infinity and repeated keys are errors): report, chrome, dump, synth and their exit codes;
# then loads every report the mutation test left behind.
import json
import os
import subprocess
import sys


def reject_constant(name):
    raise ValueError("not JSON: " + name)


def unique_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("repeated key in " + repr(keys))
    return dict(pairs)


def strict_loads(text):
    """json.loads without Python's extensions (NaN, Infinity) and without silently dropping
    a repeated key."""
    return json.loads(text, parse_constant=reject_constant, object_pairs_hook=unique_keys)

KINDS = ["textLog", "diagnostic", "frameGraphFrame", "perfFrame", "memoryFrame", "thread",
         "stringTable", "counterFrame", "mark"]


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, timeout=60)


def main():
    tool, data, work = sys.argv[1], sys.argv[2], sys.argv[3]
    jsonl = sys.argv[4] if len(sys.argv) > 4 else None
    os.makedirs(work, exist_ok=True)
    stream = os.path.join(data, "golden_run.nwbs")
    names = os.path.join(data, "golden_run.namesym")

    # report: the same bytes as the checked-in expectation, valid JSON, complete events map.
    out = os.path.join(work, "report.json")
    r = run(tool, "report", stream, "--namesym", names, "-o", out)
    assert r.returncode == 0, r.stderr
    with open(out, "rb") as f:
        got = f.read()
    with open(os.path.join(data, "golden_run.report.json"), "rb") as f:
        assert got == f.read(), "report differs from golden_run.report.json"
    rep = strict_loads(got)
    assert rep["schema"] == "nwb-telemetry-report/1"
    assert list(rep["events"].keys()) == KINDS + ["unknown"], rep["events"]
    assert rep["decode"]["status"] == "ok"
    assert rep["frames"]["count"] == 90
    assert len(rep["frames"]["worst"]) == 10
    durations = [w["ms"] for w in rep["frames"]["worst"]]
    assert durations == sorted(durations, reverse=True)
    assert rep["frames"]["maxMs"] == durations[0]
    for s in rep["scopes"]["cpu"] + rep["scopes"]["gpu"]:
        assert s["minMs"] <= s["meanMs"] <= s["maxMs"] + 1e-6, s
        assert s["firstSourceFrame"] <= s["lastSourceFrame"], s
    assert rep["memory"]["heapBacking"] and rep["memory"]["arenas"]
    # Format 1.1: three named threads, the scope table per thread, counters, marks.
    threads = rep["threads"]
    assert [t["thread"] for t in threads] == [1, 2, 3], threads
    assert [t["name"] for t in threads] == ["main", "worker", "audio"], threads
    for t in threads:
        assert 0 <= t["dropped"] <= t["records"] and t["malformed"] >= 0, t
        assert t["scopes"] > 0 and t["cpuMs"] > 0, t
    assert rep["profiler"]["dropped"] == sum(t["dropped"] for t in threads) > 0
    assert rep["profiler"]["malformed"] == sum(t["malformed"] for t in threads) > 0
    assert list(rep["profiler"].keys()) == ["dropped", "malformed", "namesNotKept",
                                            "countersNotKept", "threadsNotKept",
                                            "threadScopesNotKept"], rep["profiler"]
    by_thread = rep["scopes"]["cpuByThread"]
    assert [t["thread"] for t in by_thread] == [1, 2, 3], by_thread
    row_keys = list(rep["scopes"]["cpu"][0].keys())
    for t in by_thread:
        for row in t["cpu"]:
            assert list(row.keys()) == row_keys, row
    # Every CPU scope instance is in exactly one thread's rows.
    assert sum(r["samples"] for t in by_thread for r in t["cpu"]) == \
        sum(r["samples"] for r in rep["scopes"]["cpu"])
    counters = rep["counters"]
    assert [c["name"] for c in counters] == sorted(c["name"] for c in counters), counters
    assert {c["name"] for c in counters} == {"audio.voices", "physics.bodies",
                                              "render.drawCalls", "worker.queueDepth"}
    for c in counters:
        assert c["min"] <= c["mean"] <= c["max"] and c["frames"] == 90, c
        assert 0 < len(c["series"]) <= rep["memory"]["seriesMaxPoints"], c
        for pt in c["series"]:
            assert c["min"] <= pt["min"] <= pt["mean"] <= pt["max"] <= c["max"], pt
    marks = rep["marks"]
    assert marks["count"] == len(marks["listed"]) + marks["notListed"] and marks["count"] > 0
    for m in marks["listed"]:
        assert m["tsMs"] >= 0 and m["threadName"] in ("main", "worker"), m

    # chrome: a trace Perfetto can open.
    trace = os.path.join(work, "trace.json")
    r = run(tool, "chrome", stream, "--namesym", names, "-o", trace)
    assert r.returncode == 0, r.stderr
    with open(trace, "rb") as f:
        doc = strict_loads(f.read())
    events = doc["traceEvents"]
    phases = {}
    for e in events:
        assert e["ph"] in ("X", "i", "C", "M"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
        phases[e["ph"]] = phases.get(e["ph"], 0) + 1
    assert phases["X"] == 90 * 25, phases
    assert phases["C"] > 0 and phases["i"] > 0, phases
    named = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert named == {0: "frames", 1: "main", 2: "worker", 3: "audio"}, named
    order = {e["tid"]: e["args"]["sort_index"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_sort_index"}
    assert order == {0: 0, 1: 1, 2: 2, 3: 3}, order
    assert {e["tid"] for e in events if e["ph"] == "X" and e["cat"] == "cpu"} == {1, 2, 3}
    samples = [e for e in events if e["ph"] == "C" and e["cat"] == "counter"]
    assert len(samples) == 90 * 5 and all(isinstance(e["args"]["value"], (int, float))
                                          for e in samples)
    assert any(e["ph"] == "i" and e["cat"] == "mark" and e["s"] == "t" for e in events)
    r = run(tool, "chrome", stream)
    assert r.returncode == 2, "chrome without -o must be a usage error"

    # dump: one line per segment and event plus the status line.
    r = run(tool, "dump", stream)
    assert r.returncode == 0
    lines = r.stdout.decode().splitlines()
    assert lines[-1].startswith("status=ok"), lines[-1]
    assert sum(1 for l in lines if " perfFrame " in l) == 90
    assert sum(1 for l in lines if " counterFrame " in l) == 90
    assert sum(1 for l in lines if " stringTable " in l) == 3
    assert sum(1 for l in lines if " thread v1 " in l) == 9
    assert any(' mark v1 ' in l and '"level loaded"' in l for l in lines)

    # synth: the same options give the same bytes.
    again = os.path.join(work, "again.nwbs")
    r = run(tool, "synth", "-o", again, "--seed", "1", "--frames", "90", "--scopes", "24",
            "--gpu", "4", "--arenas", "3", "--logs", "1", "--frames-per-upload", "30",
            "--frame-graph-every", "30", "--diagnostics-every", "45", "--unknown-kinds")
    assert r.returncode == 0, r.stderr
    with open(again, "rb") as a, open(stream, "rb") as b:
        assert a.read() == b.read(), "synth is not deterministic"

    # A damaged stream: exit 1, the report still written and describing the failure.
    cut = os.path.join(work, "cut.nwbs")
    with open(stream, "rb") as f:
        whole = f.read()
    with open(cut, "wb") as f:
        f.write(whole[: len(whole) // 2])
    out2 = os.path.join(work, "cut.json")
    r = run(tool, "report", cut, "-o", out2)
    assert r.returncode == 1, r.returncode
    with open(out2, "rb") as f:
        rep2 = strict_loads(f.read())
    assert rep2["decode"]["status"] == "NWB_ETRUNCATED", rep2["decode"]
    assert 0 < rep2["decode"]["errorOffset"] <= len(whole) // 2
    assert rep2["frames"]["count"] > 0
    r = run(tool, "report", os.path.join(work, "missing.nwbs"))
    assert r.returncode == 2
    r = run(tool, "frobnicate")
    assert r.returncode == 2

    if jsonl:
        n = 0
        with open(jsonl) as f:
            for line in f:
                strict_loads(line)
                n += 1
        assert n == 3000, n
    print("check_tool: ok")


if __name__ == "__main__":
    main()
