#!/usr/bin/env python3
"""A synthetic production-like JSON-lines trace for `frugal replay` (docs/replay.md),
to time replays of large clusters (docs/benchmarks.md).

usage: bench/gen-trace.py N_PODS OUT [--seed S] [--span SECONDS] [--gpu] [--owners K] [--warm]

~K owners (Deployments -> ReplicaSet, StatefulSets, Jobs); every owner has one pod
shape (cpu 50m..16, memory 64Mi..64Gi); with --gpu some owners ask 1..8 nvidia.com/gpu
and tolerate the taint, some pin a GPU model / instance type via nodeSelector or
required node affinity (labels that cluster-gpu.yaml's templates carry).
Arrivals follow a daily cycle (1 + 0.6 sin); durations from minutes to the whole span.
The Job share grows with N so that concurrency stays near what the cluster can hold.
With --warm the trace starts in a running cluster, as one built by `replay
--from-prometheus` does: the pods are drawn over two spans and the first is cut off, so
the pods still running at the cut arrive at 0 with what is left of their lifetime.
Output sorted by t.
"""
import json, math, random, sys, argparse

ap = argparse.ArgumentParser()
ap.add_argument("n", type=int)
ap.add_argument("out")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--span", type=int, default=604800)
ap.add_argument("--gpu", action="store_true")
ap.add_argument("--owners", type=int, default=50)
ap.add_argument("--warm", action="store_true")
a = ap.parse_args()
R = random.Random(a.seed)
SPAN = a.span

def logu(lo, hi):
    return math.exp(R.uniform(math.log(lo), math.log(hi)))

def cpu_q(m):
    m = max(50, int(m))
    return f"{m}m" if m % 1000 else str(m // 1000)

def mem_q(mi):
    mi = max(64, int(mi))
    return f"{mi // 1024}Gi" if mi % 1024 == 0 and mi >= 1024 else f"{mi}Mi"

GPU_MODELS = ["nvidia-tesla-t4", "nvidia-l4", "nvidia-tesla-a100"]
# target concurrency ~2500 pods: mean duration ~ 2500*SPAN/N
frac_job = min(0.95, max(0.3, 1 - 20000 / max(a.n, 1) * 0.7))

owners = []
for i in range(a.owners):
    r = R.random()
    kind = "Job" if r < frac_job else ("StatefulSet" if r < frac_job + (1 - frac_job) * 0.25 else "Deployment")
    # shape: cpu 50m..16 log-uniform, memory per cpu 0.5..8 GiB (clamped 64Mi..64Gi)
    cpu_m = logu(50, 16000)
    mem_mi = min(65536, max(64, cpu_m / 1000 * logu(512, 8192)))
    o = {"kind": kind, "name": f"{kind.lower()}-{i:02d}", "cpu": cpu_m, "mem": mem_mi,
         "gpu": 0, "sel": None, "aff": None, "weight": logu(1, 20)}
    if a.gpu and R.random() < 0.2:
        g = R.choice([1, 1, 1, 2, 4, 8])
        o["gpu"] = g
        o["cpu"] = min(o["cpu"], 10000 * g) if g < 8 else min(max(o["cpu"], 8000), 90000)
        o["mem"] = min(65536, max(o["mem"], 4096 * g))
        pin = R.random()
        if pin < 0.3:
            # A100 only for big ones
            model = "nvidia-tesla-a100" if g >= 4 else R.choice(GPU_MODELS)
            o["sel"] = {"cloud.google.com/gke-accelerator": model}
        elif pin < 0.5:
            model = "nvidia-tesla-a100" if g == 8 else R.choice(GPU_MODELS[1:])
            o["aff"] = model
        elif g == 8:
            o["sel"] = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
    elif R.random() < 0.1:
        o["sel"] = {"node.kubernetes.io/instance-type": R.choice(["n1-highmem-16", "n1-standard-16"])}
        o["cpu"] = min(o["cpu"], 12000)
        o["mem"] = min(o["mem"], 40000)
    if kind == "Job":
        o["dur"] = (60, 6 * 3600)
    elif kind == "StatefulSet":
        o["dur"] = (6 * 3600, SPAN)
    else:
        o["dur"] = (600, SPAN)
    owners.append(o)

W = sum(o["weight"] for o in owners)

def arrival():
    # daily cycle by thinning
    while True:
        t = R.uniform(0, SPAN)
        if R.random() < (1 + 0.6 * math.sin(2 * math.pi * t / 86400)) / 1.6:
            return int(t)

def pick():
    x = R.uniform(0, W)
    for o in owners:
        x -= o["weight"]
        if x <= 0:
            return o
    return owners[-1]

recs = []
for k in range(a.n * (2 if a.warm else 1)):
    o = pick()
    t = arrival()
    d = int(logu(*o["dur"]))
    if a.warm:  # drawn over [-SPAN, SPAN): the first span is cut off
        t -= SPAN if k % 2 == 0 else 0
        if t + d <= 0:
            continue
        if t < 0:
            d, t = t + d, 0
    d = max(1, min(d, SPAN - t))
    res = {"requests": {"cpu": cpu_q(o["cpu"]), "memory": mem_q(o["mem"])}}
    if o["gpu"]:
        res["requests"]["nvidia.com/gpu"] = str(o["gpu"])
        res["limits"] = {"nvidia.com/gpu": str(o["gpu"])}
    spec = {"containers": [{"name": "main", "image": "img", "resources": res}]}
    if o["gpu"]:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    if o["sel"]:
        spec["nodeSelector"] = o["sel"]
    if o["aff"]:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "cloud.google.com/gke-accelerator",
                                                          "operator": "In", "values": [o["aff"]]}]}]}}}
    okind = "ReplicaSet" if o["kind"] == "Deployment" else o["kind"]
    oname = o["name"] + ("-7d9f8c" if okind == "ReplicaSet" else "")
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{oname}-{k:06d}", "namespace": "prod",
                        "ownerReferences": [{"apiVersion": "apps/v1" if okind != "Job" else "batch/v1",
                                             "kind": okind, "name": oname, "uid": f"uid-{o['name']}",
                                             "controller": True}]},
           "spec": spec}
    recs.append((t, k, {"t": t, "pod": pod, "duration": d}))

recs.sort(key=lambda r: (r[0], r[1]))
with open(a.out, "w") as f:
    for _, _, r in recs:
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
print(f"{a.out}: {len(recs)} pods, frac_job={frac_job:.2f}", file=sys.stderr)
