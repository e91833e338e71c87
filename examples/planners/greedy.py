#!/usr/bin/env python3
"""A taotsim exec planner (docs/planner-protocol.md), standard library only.

Greedy: copy the hottest expert of the hottest rank to slot 0 of the coldest
rank; every source rank sends it floor(tokens / divisor) of that expert's
tokens (--LABEL-divisor=N, default 2: half). Ties go to the lowest index.
    taotsim replay TRACE --planners "g=exec:python3 examples/planners/greedy.py"
"""
import json
import sys


def plan(counts, home, slots, divisor):
    ranks, experts = len(counts), len(home)
    per_expert = [sum(row[e] for row in counts) for e in range(experts)]
    load = [0] * ranks
    for e in range(experts):
        load[home[e]] += per_expert[e]
    hot = max(range(ranks), key=lambda r: (load[r], -r))
    cold = min(range(ranks), key=lambda r: (load[r], r))
    if slots < 1 or load[hot] == load[cold]:
        return [], []
    expert = max((e for e in range(experts) if home[e] == hot), key=lambda e: (per_expert[e], -e))
    alloc = [[r, expert, cold, 0, counts[r][expert] // divisor] for r in range(ranks)
             if counts[r][expert] // divisor > 0]
    if not alloc:
        return [], []
    return [[expert, cold, 0, sum(a[4] for a in alloc)]], alloc


def main():
    hello = json.loads(sys.stdin.readline())
    topology = hello["topology"]
    divisor = int(hello["options"].get("divisor", "2"))
    print(json.dumps({"ok": True, "name": "greedy.py"}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        replicas, alloc = plan(request["counts"], topology["home"], topology["slots"], divisor)
        print(json.dumps({"id": request["id"], "replicas": replicas, "alloc": alloc}), flush=True)


if __name__ == "__main__":
    main()
