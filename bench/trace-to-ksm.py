#!/usr/bin/env python3
"""kube-state-metrics series (OpenMetrics, for `promtool tsdb create-blocks-from
openmetrics`) of the pods of a JSON-lines trace, as a cluster that ran them would have
had them scraped, to time `frugal replay --from-prometheus` on large clusters and check
it against the trace itself (bench/prom_scale.sh, docs/benchmarks.md).

usage: bench/trace-to-ksm.py TRACE.jsonl OUT.om REF.jsonl --end UNIX [--interval S]

The trace's time 0 is END minus its span (the latest end of a pod, rounded up to the
interval). Every pod starts when it is created and is scraped every INTERVAL seconds
while it runs; a Job's pod gets a completion time. Times are put on the scrape grid
(a pod runs at least one interval), and REF.jsonl is the trace so aligned: what the
series say, to the second, and so what `--from-prometheus --save-trace` must rebuild.
Only what the series can carry is kept: requests (cpu, memory, nvidia.com/gpu), the
owner, the nodeSelector and the tolerations; a pod with node affinity is refused.
"""
import argparse, json, re, sys

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("out")
ap.add_argument("ref")
ap.add_argument("--end", type=int, required=True)
ap.add_argument("--interval", type=int, default=60)
a = ap.parse_args()
STEP = a.interval
SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
          "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}


def quantity(q):
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(q))
    if not m or m.group(2) not in SUFFIX:
        sys.exit(f"trace-to-ksm: quantity {q!r} is not one this script reads")
    return float(m.group(1)) * SUFFIX[m.group(2)]


def grid_down(t):
    return t // STEP * STEP


pods = []
with open(a.trace) as f:
    for n, line in enumerate(f, 1):
        if not line.strip():
            continue
        r = json.loads(line)
        if "affinity" in r["pod"]["spec"]:
            sys.exit(f"trace-to-ksm: {a.trace}:{n}: node affinity has no kube-state-metrics series")
        t0 = grid_down(int(r["t"]))
        t1 = max(t0 + STEP, grid_down(int(r["t"]) + int(r["duration"])))
        pods.append((t0, t1, r))
span = max(t1 for _, t1, _ in pods)
span = (span + STEP - 1) // STEP * STEP
start = a.end - span
ksm = lambda key: re.sub("([a-z0-9])([A-Z])", r"\1_\2", re.sub("[^a-zA-Z0-9_]", "_", key)).lower()
RESOURCES = (("cpu", "cpu", "core"), ("memory", "memory", "byte"), ("nvidia.com/gpu", "nvidia_com_gpu", "integer"))


def labels(d):
    return "{" + ",".join('%s="%s"' % kv for kv in d.items()) + "}"


def families(i, t0, t1, r):
    """(family, labels, value, first, last) of pod i's series."""
    md, spec = r["pod"]["metadata"], r["pod"]["spec"]
    base = {"namespace": md.get("namespace", "default"), "pod": md["name"], "uid": "uid-%d" % i}
    owner = (md.get("ownerReferences") or [{}])[0]
    job = owner.get("kind") == "Job"
    running = start + t1 >= a.end  # still running at the end of the range
    last = a.end if running else start + t1
    created = start + t0
    out = [("kube_pod_created", base, float(created), created, last),
           ("kube_pod_start_time", base, float(created), created, last),
           ("kube_pod_info", dict(base, node="node-%d" % i), 1.0, created, last)]
    if job and not running:
        out.append(("kube_pod_completion_time", base, float(last), last, last))
    if owner:
        out.append(("kube_pod_owner", dict(base, owner_kind=owner["kind"], owner_name=owner["name"],
                                           owner_is_controller="true"), 1.0, created, last))
    for c in spec.get("containers", []):
        req = c.get("resources", {}).get("requests", {})
        for key, res, unit in RESOURCES:
            if key in req:
                out.append(("kube_pod_container_resource_requests",
                            dict(base, container=c["name"], node="node-%d" % i, resource=res, unit=unit),
                            quantity(req[key]), created, last))
    if spec.get("nodeSelector"):
        sel = {"nodeselector_" + ksm(k): v for k, v in spec["nodeSelector"].items()}
        out.append(("kube_pod_nodeselectors", dict(base, **sel), 1.0, created, last))
    for tol in spec.get("tolerations", []):
        out.append(("kube_pod_tolerations", dict(base, key=tol.get("key", ""), operator=tol.get("operator", ""),
                                                 value=tol.get("value", ""), effect=tol.get("effect", "")),
                    1.0, created, last))
    return out


ORDER = ["kube_pod_created", "kube_pod_start_time", "kube_pod_completion_time", "kube_pod_info",
         "kube_pod_owner", "kube_pod_container_resource_requests", "kube_pod_nodeselectors",
         "kube_pod_tolerations"]
samples = 0
with open(a.out, "w") as f:
    for fam in ORDER:  # one pass per family: OpenMetrics keeps a family's samples together
        f.write("# TYPE %s gauge\n" % fam)
        for i, (t0, t1, r) in enumerate(pods):
            for name, lab, value, first, last in families(i, t0, t1, r):
                if name != fam:
                    continue
                text, t = name + labels(lab) + " " + repr(value) + " ", first
                while t <= last:
                    f.write(text + "%d\n" % t)
                    t += STEP
                    samples += 1
    f.write("# EOF\n")
with open(a.ref, "w") as f:
    # in the order --save-trace writes: by arrival, then by name
    for t0, t1, r in sorted(pods, key=lambda p: (p[0], p[2]["pod"]["metadata"]["name"])):
        running = start + t1 >= a.end
        f.write(json.dumps({"t": t0, "pod": r["pod"], "duration": (span if running else t1) - t0},
                           separators=(",", ":")) + "\n")
print(f"{a.out}: {len(pods)} pods, {samples} samples over {span} s from {start}", file=sys.stderr)
