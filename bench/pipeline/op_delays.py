#!/usr/bin/env python3
"""How long each kind of GPU op waits between its launch and its start, from a fovea trace:

  op_delays.py TRACE_DIR/trace.json [--min-count 50] [--top 30]

fovea's trace (`--trace DIR`) records every GPU op of the process (CUPTI), nvJPEG's and the
libraries' included, with the call that launched it (the "launch" flow events). Per group of ops
(name, kind, stream, launching call) this prints the count, the median duration and the launch-to-
start delay (median, 90th percentile), the groups with the most total delay first. A delay is time
in the stream's queue: behind earlier work of the same stream, an event it waits for, or kernels of
other streams that the GPU started first. Stream numbers are CUPTI's; fovea's stages each have one,
and libraries (nvJPEG) may use their own.
"""
import argparse
import collections
import json
import statistics


def launch_times(events):
    """Correlation id -> the launching call's time (us)."""
    return {e["id"]: e["ts"] for e in events if e.get("ph") == "s" and e.get("cat") == "launch"}


def op_groups(events, launched):
    """(name, kind, stream, api) -> [(duration, delay)] in us, for the GPU ops with a known launch."""
    groups = collections.defaultdict(list)
    for e in events:
        args = e.get("args", {})
        if e.get("ph") != "X" or e.get("cat") == "cuda_api" or "correlation" not in args:
            continue
        launch = launched.get(args["correlation"])
        if launch is None:
            continue
        key = (e["name"][:70], e["cat"], e["tid"], args.get("api", "")[:30])
        groups[key].append((e["dur"], e["ts"] - launch))
    return groups


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="trace.json of a fovea --trace folder")
    parser.add_argument("--min-count", type=int, default=50, help="leave out groups with fewer ops")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    rows = []
    for key, ops in op_groups(events, launch_times(events)).items():
        if len(ops) < args.min_count:
            continue
        delays = sorted(delay for _, delay in ops)
        rows.append((key, len(ops), statistics.median(d for d, _ in ops), statistics.median(delays),
                     delays[int(0.9 * (len(delays) - 1))]))
    rows.sort(key=lambda row: -row[1] * row[3])
    print("count  dur_med_us  delay_med_us  delay_p90_us  stream  kind  api  name")
    for (name, kind, stream, api), count, duration, delay, delay_p90 in rows[:args.top]:
        print(f"{count:6d} {duration:10.1f} {delay:12.1f} {delay_p90:12.1f}  {stream}  {kind}  {api}  {name}")


if __name__ == "__main__":
    main()
