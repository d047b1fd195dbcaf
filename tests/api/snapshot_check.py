"""snapshot_check.py PICKLE JSON EXPECT: load a galloc snapshot with Python's
own pickle and json modules and check it field by field against what the C++
test knew of the allocator's state (EXPECT, a JSON file it wrote).
Exit 0 when everything matches, 1 with the mismatches listed."""
import json
import pickle
import sys

errors = []


def eq(what, got, want):
    if got != want:
        errors.append(f"{what}: got {got!r}, want {want!r}")


def main():
    with open(sys.argv[1], "rb") as f:
        snap = pickle.load(f)
    with open(sys.argv[2]) as f:
        from_json = json.load(f)
    with open(sys.argv[3]) as f:
        want = json.load(f)

    # The JSON writer carries the same dictionary.
    # The JSON writer carries the same dictionary; written second, its trace
    # also holds the "snapshot" entry of the first write.
    as_json = json.loads(json.dumps(snap))
    for k in ("segments", "allocator_settings", "external_annotations"):
        eq(f"json {k} equals pickle", from_json[k] == as_json[k], True)
    eq("json trace = pickle trace + 1 snapshot entry", from_json["device_traces"][0][:-1], as_json["device_traces"][0])
    eq("json's extra entry", from_json["device_traces"][0][-1]["action"], "snapshot")
    eq("top-level keys", sorted(snap), sorted(["segments", "device_traces", "allocator_settings",
                                                "external_annotations"]))
    segs = snap["segments"]
    eq("segment addresses ascending", [s["address"] for s in segs], sorted(s["address"] for s in segs))
    seg_keys = ["device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
                "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"]
    states = {"active_allocated": 0, "active_pending_free": 0, "inactive": 0}
    for i, s in enumerate(segs):
        for k in seg_keys:
            if k not in s:
                errors.append(f"segment {i} lacks {k}")
        addr = s["address"]
        for b in s["blocks"]:
            eq(f"segment {i} block address", b["address"], addr)  # blocks tile the segment
            addr += b["size"]
            states[b["state"]] += 1
        eq(f"segment {i} total_size", s["total_size"], sum(b["size"] for b in s["blocks"]))
        eq(f"segment {i} allocated_size", s["allocated_size"],
           sum(b["size"] for b in s["blocks"] if b["state"] == "active_allocated"))
        eq(f"segment {i} active_size", s["active_size"],
           sum(b["size"] for b in s["blocks"] if b["state"] != "inactive"))
        eq(f"segment {i} segment_type", s["segment_type"] in ("small", "large"), True)
        eq(f"segment {i} pool id is a 2-tuple", isinstance(s["segment_pool_id"], tuple), True)

    # Against the allocator's own figures.
    eq("reserved = sum(total_size)", sum(s["total_size"] for s in segs), want["reserved"])
    eq("allocated = sum(allocated_size)", sum(s["allocated_size"] for s in segs), want["allocated"])
    eq("active = sum(active_size)", sum(s["active_size"] for s in segs), want["active"])
    eq("requested = sum(requested_size)", sum(s["requested_size"] for s in segs), want["requested"])
    eq("segments", len(segs), want["segments"])
    eq("expandable segments", sum(1 for s in segs if s["is_expandable"]), want["expandable_segments"])
    eq("private pool segments", sum(1 for s in segs if s["segment_pool_id"] != (0, 0)), want["private_segments"])
    eq("block states", states, want["states"])

    traces = snap["device_traces"]
    eq("one device", len(traces), 1)
    actions = [e["action"] for e in traces[0]]
    eq("every action", sorted(set(actions)), sorted(want["actions"]))
    for e in traces[0]:
        for k in ("action", "size", "stream", "time_us", "frames"):
            if k not in e:
                errors.append(f"trace entry {e['action']} lacks {k}")
        if e["action"] == "oom":
            eq("oom device_free", e["device_free"], want["oom_device_free"])
    times = [e["time_us"] for e in traces[0]]
    eq("time ascending", times, sorted(times))
    eq("alloc sizes", [e["size"] for e in traces[0] if e["action"] == "alloc"], want["alloc_sizes"])

    st = snap["allocator_settings"]
    eq("settings expandable_segments", st["expandable_segments"], want["expandable"])
    eq("settings max_split_size", st["max_split_size"], want["max_split_size"])
    eq("settings conf string", st["PYTORCH_CUDA_ALLOC_CONF"], want["conf"])
    eq("annotations", [[x["stage"], x["name"]] for x in snap["external_annotations"]], want["annotations"])

    if errors:
        print("\n".join(errors))
        return 1
    print("ok")
    return 0


sys.exit(main())
