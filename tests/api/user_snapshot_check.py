"""Check a user allocator's snapshot (user_allocator_test).

usage: user_snapshot_check.py SNAPSHOT.pickle SNAPSHOT.json EXPECT.json

EXPECT.json: {"segments": [[address, size, "small"|"large"], ...] (address order),
              "actions": ["segment_alloc", "alloc", ...] (device 0's trace, in order)}
The pickle is written first, then the JSON (one more "snapshot" entry). Both
must hold the same dictionary: every live allocation one segment
with one active_allocated block, PyTorch's keys and value types.
"""
import json
import pickle
import sys


def check(snap, want, actions_want):
    segs = snap["segments"]
    got = [[s["address"], s["total_size"], s["segment_type"]] for s in segs]
    assert got == want["segments"], (got, want["segments"])
    for s in segs:
        assert s["device"] == 0
        assert s["allocated_size"] == s["active_size"] == s["requested_size"] == s["total_size"], s
        assert s["is_expandable"] is False
        assert tuple(s["segment_pool_id"]) == (0, 0)
        (b,) = s["blocks"]
        assert b["address"] == s["address"] and b["size"] == s["total_size"], b
        assert b["requested_size"] == b["size"] and b["state"] == "active_allocated", b
    (trace,) = snap["device_traces"]
    actions = [e["action"] for e in trace]
    assert actions == actions_want, actions
    assert snap["allocator_settings"]["max_split_size"] == -1, snap["allocator_settings"]


def main():
    with open(sys.argv[3]) as f:
        want = json.load(f)
    with open(sys.argv[1], "rb") as f:
        check(pickle.load(f), want, want["actions"])
    # Written second: each write records a "snapshot" entry first, as PyTorch's does.
    with open(sys.argv[2]) as f:
        check(json.load(f), want, want["actions"] + ["snapshot"])
    print("ok")


if __name__ == "__main__":
    main()
