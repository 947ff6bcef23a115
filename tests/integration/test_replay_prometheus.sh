#!/usr/bin/env bash
# `frugal replay --from-prometheus`: a known synthetic cluster history is written as
# kube-state-metrics series (OpenMetrics), backfilled into a TSDB with promtool, and
# served by a real Prometheus (Debian's) on loopback. The trace frugal builds from it
# must match the history (same pods, requests, owners; arrivals and durations within one
# query step), and replaying it must give the same figures as replaying the history
# written directly as a trace. Then every bad input of docs/replay.md: one line, exit 1,
# no partial trace.
source "$(dirname "$0")/lib.sh"

for tool in python3 promtool prometheus openssl curl; do
    command -v "$tool" >/dev/null || fatal "$tool is required (scripts/install-deps.sh)"
done

# serve_python PORT [ARG...]: the Python HTTP server on stdin (argv[1] is its port) runs in
# the background until the test ends; returns once it answers. The script may use
# reply(handler, code, raw[, content_type]) and the handler class Quiet (logs nothing).
SERVE_PYTHON_PRELUDE='import http.server
def reply(h, code, raw, ctype="application/json"):
    h.send_response(code)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(raw)))
    h.end_headers()
    h.wfile.write(raw)
class Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
'
serve_python() {
    local port=$1 script
    script=$SERVE_PYTHON_PRELUDE$(cat) # a job in the background would read /dev/null
    python3 -c "$script" "$@" >/dev/null 2>&1 &
    ALL_SERVER_PIDS+=("$!")
    for _ in $(seq 1 50); do curl -s "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done
}

# The history ends an hour ago (on a 30 s grid) and spans 8 h: two query windows of 6 h.
END=$(( $(date +%s) / 60 * 60 - 3600 ))
START=$((END - 8 * 3600))
mkdir -p "$TMP/prom"
python3 - "$START" "$END" "$TMP/history.om" "$TMP/expected.jsonl" <<'PY'
import json, re, sys
start, end, om_path, trace_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
# name, ns, owner kind, created offset, start delay, run seconds (None: still running),
# completed (Job), containers [(name, cpu, mem bytes, gpu)], init containers,
# node selector {key: value}, tolerations [(key, op, value, effect[, seconds])]
GI = 1 << 30
pods = [
    ("web-1", "shop", "ReplicaSet", 0, 30, None, False, [("app", 0.5, GI, 0)], [], {}, []),
    ("web-2", "shop", "ReplicaSet", 600, 30, 5 * 3600, False, [("app", 0.5, GI, 0), ("proxy", 0.1, 128 << 20, 0)], [], {}, []),
    ("cache-0", "shop", "StatefulSet", 1200, 60, None, False, [("redis", 1.0, 12 * GI, 0)], [], {}, []),
    ("etl-1", "batch", "Job", 3600, 90, 1800, True, [("etl", 2.0, 2 * GI, 0)], [("fetch", 3.0, GI, 0)], {}, []),
    ("etl-2", "batch", "Job", 7200, 30, 2 * 3600, True, [("etl", 2.5, 3 * GI, 0)], [], {}, []),
    ("etl-3", "batch", "Job", 4 * 3600, 0, 3600, True, [("etl", 1.5, GI, 0)], [], {}, []),
    ("train-1", "ml", "Job", 2 * 3600, 120, 3 * 3600, True, [("train", 4.0, 16 * GI, 1)], [],
     {"example.com/pool": "gpu", "example.com/gpuModel": "t4"},
     [("nvidia.com/gpu", "Exists", "", "NoSchedule"), ("node.kubernetes.io/not-ready", "Exists", "", "NoExecute", 300)]),
    ("api-1", "shop", "ReplicaSet", 5 * 3600, 30, None, False, [("api", 0.75, 2 * GI, 0)], [], {}, []),
    ("node-exporter-x", "monitoring", "DaemonSet", 0, 10, None, False, [("exporter", 0.1, 64 << 20, 0)], [], {}, []),
    ("kube-proxy-node-0", "kube-system", "Node", 0, 10, None, False, [("proxy", 0.1, 64 << 20, 0)], [], {}, []),
    ("ops-1", "ops", "ReplicaSet", 900, 30, 4 * 3600, False, [("app", 0.25, GI, 0), ("proxy", 0.1, 128 << 20, 0)], [], {}, []),
    ("mesh-1", "shop", "ReplicaSet", 1800, 30, None, False, [("app", 1.0, GI, 0)],
     [("setup", 2.0, 0, 0), ("proxy", 0.1, 128 << 20, 0)], {}, []),
    ("be-1", "shop", "ReplicaSet", 1500, 30, None, False, [], [], {}, []),
    ("eph-1", "shop", "ReplicaSet", 2400, 30, 3 * 3600, False, [], [], {}, []),
]
# Pods without requests (BestEffort): the trace gives them one container without
# resources, named after the container of an ephemeral storage request, else "main".
ephemeral = {"eph-1": "scratch"}
# Pods whose series Prometheus scraped with honor_labels: false: the target's namespace,
# pod and container stay, kube-state-metrics' own come as exported_*.
exported = {"ops-1"}
# Init containers with restart policy Always (sidecars), and pod overheads (cores, bytes).
sidecars = {"mesh-1": {"proxy"}}
overheads = {"mesh-1": (0.25, 100 << 20)}
# A container that was terminated for two minutes, then restarted: kube-state-metrics
# shows a completion time meanwhile, though the pod runs on, and counts the restart.
restarts = {"web-1": 3 * 3600 + 600}
step = 30
families = {k: [] for k in ["kube_pod_created", "kube_pod_start_time", "kube_pod_completion_time",
    "kube_pod_info", "kube_pod_container_resource_requests", "kube_pod_init_container_resource_requests",
    "kube_pod_owner", "kube_pod_nodeselectors", "kube_pod_tolerations", "kube_pod_init_container_info",
    "kube_pod_overhead_cpu_cores", "kube_pod_overhead_memory_bytes", "kube_pod_container_status_restarts_total"]}
def ksm_label(prefix, key):  # kube-state-metrics' label name of a Kubernetes label key
    return prefix + "_" + re.sub("([a-z0-9])([A-Z])", r"\1_\2", re.sub("[^a-zA-Z0-9_]", "_", key)).lower()
def lab(d):
    return "{" + ",".join('%s="%s"' % (k, v) for k, v in d.items()) + "}"
def series(fam, labels, value, t0, t1):
    t = t0
    while t <= t1:
        families[fam].append("%s%s %s %d" % (fam, lab(labels), repr(value), t))
        t += step
trace = []
for i, (name, ns, kind, off, delay, run, done, cs, inits, sel, tols) in enumerate(pods):
    created = start + off
    started = created + delay
    stop = started + run if run is not None else end
    base = {"namespace": ns, "pod": name, "uid": "uid-%d" % i}
    target = {}
    if name in exported:
        target = {"container": "kube-state-metrics"}
        base = {"namespace": "monitoring", "pod": "kube-state-metrics-0", "exported_namespace": ns,
                "exported_pod": name, "uid": "uid-%d" % i, **target}
    # Series exist from creation to the pod's end (a completed Job lingers 10 min).
    last = min(end, stop + (600 if done else 0))
    series("kube_pod_created", base, float(created), created, last)
    series("kube_pod_start_time", base, float(started), started, last)
    if done:
        series("kube_pod_completion_time", base, float(stop), stop, last)
    if name in restarts:
        at = created + restarts[name]
        series("kube_pod_completion_time", base, float(at), at, at + 120)
        counter = dict(base, container=cs[0][0])
        series("kube_pod_container_status_restarts_total", counter, 0.0, started, at + 90)
        series("kube_pod_container_status_restarts_total", counter, 1.0, at + 120, last)
    series("kube_pod_info", dict(base, node="node-%d" % i, created_by_kind=kind,
                                 created_by_name=name.rsplit("-", 1)[0]), 1.0, created, stop)
    series("kube_pod_owner", dict(base, owner_kind=kind, owner_name=name.rsplit("-", 1)[0], owner_is_controller="true"), 1.0, created, last)
    for fam, cl in (("kube_pod_container_resource_requests", cs), ("kube_pod_init_container_resource_requests", inits)):
        for (c, cpu, mem, gpu) in cl:
            for res, unit, v in (("cpu", "core", cpu), ("memory", "byte", float(mem)), ("nvidia_com_gpu", "integer", float(gpu))):
                if v:
                    named = {"exported_container": c} if target else {"container": c}
                    series(fam, dict(base, **named, node="node-%d" % i, resource=res, unit=unit), v, created, last)
    if name in ephemeral:
        series("kube_pod_container_resource_requests", dict(base, container=ephemeral[name], node="node-%d" % i,
               resource="ephemeral_storage", unit="byte"), float(GI), created, last)
    for (c, _, _, _) in inits:
        policy = "Always" if c in sidecars.get(name, ()) else ""
        series("kube_pod_init_container_info", dict(base, container=c, restart_policy=policy), 1.0, started, last)
    if name in overheads:
        series("kube_pod_overhead_cpu_cores", base, overheads[name][0], created, last)
        series("kube_pod_overhead_memory_bytes", base, float(overheads[name][1]), created, last)
    if sel:
        series("kube_pod_nodeselectors", dict(base, **{ksm_label("nodeselector", k): v for k, v in sel.items()}), 1.0, created, last)
    for t in tols:
        extra = {"toleration_seconds": str(t[4])} if len(t) > 4 else {}
        series("kube_pod_tolerations", dict(base, key=t[0], operator=t[1], value=t[2], effect=t[3], **extra), 1.0, created, last)
    if kind in ("DaemonSet", "Node"):  # they come with their node, whatever the strategy
        continue
    def cont(c, sidecar=False):
        req = {"cpu": "%dm" % round(c[1] * 1000)}
        if c[2]:
            req["memory"] = "%d" % c[2]
        if c[3]:
            req["nvidia.com/gpu"] = "%d" % c[3]
        return dict({"name": c[0]}, **({"restartPolicy": "Always"} if sidecar else {}),
                    resources={"requests": req})
    spec = {"containers": [cont(c) for c in cs] or [{"name": ephemeral.get(name, "main")}]}
    if inits:
        # The series do not give the declaration order: the sidecars come first.
        side = sidecars.get(name, set())
        spec["initContainers"] = [cont(c, True) for c in inits if c[0] in side] + \
                                 [cont(c) for c in inits if c[0] not in side]
    if name in overheads:
        spec["overhead"] = {"cpu": "%dm" % round(overheads[name][0] * 1000), "memory": "%d" % overheads[name][1]}
    if sel:
        spec["nodeSelector"] = sel
    if tols:
        spec["tolerations"] = [dict((k2, v2) for k2, v2 in zip(("key", "operator", "value", "effect", "tolerationSeconds"), t) if v2) for t in tols]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns,
           "ownerReferences": [{"kind": kind, "name": name.rsplit("-", 1)[0], "controller": True}]}, "spec": spec}
    trace.append((created - start, name, {"t": created - start, "pod": pod, "duration": stop - started}))
# A pod with requests but no creation time: counted, left out.
series("kube_pod_container_resource_requests", {"namespace": "shop", "pod": "ghost", "uid": "uid-ghost", "container": "c", "resource": "cpu", "unit": "core"}, 1.0, start + 60, start + 600)
with open(om_path, "w") as f:
    for fam, lines in families.items():
        f.write("# TYPE %s gauge\n" % fam)
        f.write("\n".join(lines) + "\n")
    f.write("# EOF\n")
with open(trace_path, "w") as f:
    for _, _, line in sorted(trace, key=lambda x: (x[0], x[1])):
        f.write(json.dumps(line) + "\n")
PY
[ -s "$TMP/history.om" ] || fatal "no history written"
promtool tsdb create-blocks-from openmetrics "$TMP/history.om" "$TMP/prom/data" >"$TMP/prom/promtool.log" 2>&1 ||
    { tail -5 "$TMP/prom/promtool.log" >&2; fatal "promtool could not backfill"; }

PROM_PORT=$(free_port)
printf 'global: {scrape_interval: 1m}\n' >"$TMP/prom/prometheus.yml"
prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
    --storage.tsdb.retention.time=30d --web.listen-address="127.0.0.1:$PROM_PORT" \
    >"$TMP/prom/log" 2>&1 &
ALL_SERVER_PIDS+=("$!")
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && break
    sleep 0.2
done
curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null || { tail -5 "$TMP/prom/log" >&2; fatal "prometheus not ready"; }
PROM="http://127.0.0.1:$PROM_PORT"

cat >"$TMP/cluster.yaml" <<'EOF'
machine_types:
  - {name: g1-gpu-t4, cpu: 8, memory: 30Gi, gpu: 1, gpu_type: nvidia-tesla-t4, price: 0.73}
node_groups:
  - {id: std-4, machine_type: n1-standard-4, min_size: 0, max_size: 20}
  - {id: mem-8, machine_type: n1-highmem-8, min_size: 0, max_size: 20}
  - id: gpu
    machine_type: g1-gpu-t4
    min_size: 0
    max_size: 5
    labels: {example.com/pool: gpu, example.com/gpuModel: t4}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
EOF

log "the trace built from Prometheus matches the history"
assert_ok "replay from prometheus" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --save-trace "$TMP/built.jsonl" --seeds 2 -o csv
FROM_PROM=$OUT
FROM_PROM_ERR=$ERR
assert_match "1 pod with requests but no kube_pod_created left out" "$ERR" "the pod without creation time is counted"
python3 - "$TMP/expected.jsonl" "$TMP/built.jsonl" <<'PY' && pass || fail "built trace differs from the history"
import json, sys
def load(p):
    out = {}
    for line in open(p):
        if line.strip():
            d = json.loads(line)
            m = d["pod"]["metadata"]
            out[(m["namespace"], m["name"])] = d
    return out
want, got = load(sys.argv[1]), load(sys.argv[2])
bad = []
if set(want) != set(got):
    bad.append("pods: want %s got %s" % (sorted(want), sorted(got)))
for k in set(want) & set(got):
    w, g = want[k], got[k]
    if abs(w["t"] - g["t"]) > 60 or abs(w["duration"] - g["duration"]) > 60:
        bad.append("%s: t %s/%s duration %s/%s" % (k, w["t"], g["t"], w["duration"], g["duration"]))
    for key in ("containers", "initContainers", "nodeSelector", "tolerations", "overhead"):
        # The series give no order of the tolerations: any order is the same pod.
        order = (lambda v: sorted(v, key=json.dumps)) if key == "tolerations" and w["pod"]["spec"].get(key) else (lambda v: v)
        if order(w["pod"]["spec"].get(key)) != order(g["pod"]["spec"].get(key)):
            bad.append("%s: %s %s != %s" % (k, key, w["pod"]["spec"].get(key), g["pod"]["spec"].get(key)))
    if w["pod"]["metadata"]["ownerReferences"] != g["pod"]["metadata"].get("ownerReferences"):
        bad.append("%s: owner" % (k,))
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY

log "replaying it gives the same figures as the history written as a trace"
assert_ok "replay the history" "$FRUGAL" replay -c "$TMP/cluster.yaml" "$TMP/expected.jsonl" --seeds 2 -o csv
assert_eq "$(echo "$OUT" | cut -d, -f2-)" "$(echo "$FROM_PROM" | cut -d, -f2-)" "same figures"
assert_ok "replay the saved trace" "$FRUGAL" replay -c "$TMP/cluster.yaml" "$TMP/built.jsonl" --seeds 2 -o csv
assert_eq "$(echo "$OUT" | cut -d, -f2-)" "$(echo "$FROM_PROM" | cut -d, -f2-)" "the saved trace replays the same"

log "an --until between two scrapes: the pods running then run to it, not to their last sample"
UNTIL2=$((END - 5 * 3600 - 20 * 60 - 34))
assert_ok "replay to an --until off the scrapes" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "$PROM" --since 2h --until "$UNTIL2" --save-trace "$TMP/until2.jsonl" \
    --seeds 1 --strategy random
python3 - "$TMP/expected.jsonl" "$TMP/until2.jsonl" "$START" "$UNTIL2" <<'PY' && pass ||
import json, sys
start, until = int(sys.argv[3]), int(sys.argv[4])
def load(p):
    return {(d["pod"]["metadata"]["namespace"], d["pod"]["metadata"]["name"]): d
            for d in map(json.loads, filter(str.strip, open(p)))}
history, built = load(sys.argv[1]), load(sys.argv[2])
# Running at --until: created, then started within 120 s, and not yet stopped. Those
# started before the range run through it whole; the others start late, by up to 120 s.
running = {k for k, d in history.items() if start + d["t"] <= until < start + d["t"] + d["duration"]}
early = {k for k in running if start + history[k]["t"] + 150 <= until - 7200}
whole = {k for k, d in built.items() if d["t"] == 0 and d["duration"] == 7200}
late = [k for k in running - early if not 7050 <= built[k]["t"] + built[k]["duration"] <= 7200]
ok = early == whole and len(early) >= 3 and not late
print("running at --until %s, started before the range %s, run through it whole in the trace %s, "
      "ending early %s" % (sorted(running), sorted(early), sorted(whole), late), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
    fail "the pods running at an --until between scrapes end there"

log "--save-trace writes through a link, and straight into what is not a regular file"
ln -s "$TMP/linked.jsonl" "$TMP/link.jsonl"
assert_ok "through a link" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --save-trace "$TMP/link.jsonl" --seeds 1 --strategy random
[ -L "$TMP/link.jsonl" ] && cmp -s "$TMP/linked.jsonl" "$TMP/built.jsonl" && pass ||
    fail "the link stays a link, and the file it names holds the trace"
mkfifo "$TMP/trace.fifo"
timeout 60 cat "$TMP/trace.fifo" >"$TMP/from-fifo.jsonl" &
READER=$!
assert_ok "into a pipe" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --save-trace "$TMP/trace.fifo" --seeds 1 --strategy random
[ -p "$TMP/trace.fifo" ] || kill "$READER" 2>/dev/null || true # replaced: nothing writes to it
wait "$READER" || true
[ -p "$TMP/trace.fifo" ] && cmp -s "$TMP/from-fifo.jsonl" "$TMP/built.jsonl" && pass ||
    fail "the pipe stays a pipe and carries the trace"

log "a pod no group can host is named; without --save-trace no trace line is"
sed '/^  - {id: mem-8/d; /^  - id: gpu$/,$d' "$TMP/cluster.yaml" >"$TMP/small.yaml"
assert_ok "a cluster too small" "$FRUGAL" replay -c "$TMP/small.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --seeds 1 --strategy random
assert_match "^frugal replay: prometheus: pod [a-z0-9-]+/[a-z0-9-]+: no node group can host this pod: counted, not placed$" \
    "$ERR" "the pod named, no line of a file that was not written"
assert_match "^frugal replay: prometheus: [0-9]+ pods? no node group can host" "$ERR" "and their number"

log "the report counts the DaemonSet and static pods left out (--until in Prometheus' float form)"
assert_ok "table report" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END.25" --seeds 1 --strategy random
assert_match '^prometheus: 8.0 h, 1 seeds, [0-9]+ pods per seed, 2 DaemonSet and static pods left out' "$OUT" \
    "node-exporter and the static kube-proxy counted"

log "--namespace keeps only the matching namespaces"
assert_ok "namespace batch" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --namespace 'batch|ml' --save-trace "$TMP/ns.jsonl" --seeds 1
assert_eq 4 "$(grep -c . "$TMP/ns.jsonl")" "3 ETL jobs and the training job"
assert_ok "namespace ops" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --namespace ops --save-trace "$TMP/ns-ops.jsonl" --seeds 1
assert_eq '"ops-1"' "$(python3 -c 'import json,sys; print(" ".join(json.dumps(json.loads(l)["pod"]["metadata"]["name"]) for l in open(sys.argv[1])))' "$TMP/ns-ops.jsonl")" \
    "the pod under exported_namespace, not the target's namespace"
# monitoring holds the DaemonSet's pod and is ops-1's target namespace; kube-system the
# static pod's.
assert_exit 1 "only pods left out" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --namespace 'monitoring|kube-system' --seeds 1
assert_match "no pod ran between" "$ERR" "DaemonSet and static pods left out, the target's namespace not read as the pod's"

log "--namespace with a newline and a double quote: escaped in the query and in messages"
assert_ok "a newline in the regex" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --namespace $'ops|\nx' --save-trace "$TMP/ns-nl.jsonl" --seeds 1
assert_eq "$(cat "$TMP/ns-ops.jsonl")" "$(cat "$TMP/ns-nl.jsonl")" "the regex's ops alternative matched"
assert_exit 1 "no namespace matches" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --namespace $'no\n"ne"' --seeds 1
assert_match "^frugal replay: $PROM: no pod ran between .* in namespaces matching \"no\\\\n\\\\\"ne\\\\\"\"$" \
    "$ERR" "the regex shown escaped"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"

log "bad input: one line, exit 1, no partial trace"
DEAD=$(free_port)
assert_exit 1 "unreachable" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "http://127.0.0.1:$DEAD" \
    --since 1h --save-trace "$TMP/bad1.jsonl"
assert_match "^frugal replay: cannot reach http://127.0.0.1:$DEAD: " "$ERR" "unreachable named"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"
[ ! -e "$TMP/bad1.jsonl" ] && [ -z "$(ls "$TMP" | grep bad1)" ] && pass || fail "no trace written, no temporary file left"
assert_exit 1 "unreachable, a password in the URL" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://reader:pa55word@127.0.0.1:$DEAD" --since 1h
assert_match "^frugal replay: cannot reach http://reader:\*\*\*@127.0.0.1:$DEAD: " "$ERR" \
    "the URL named with its password hidden"

# A trace that cannot be written is said before any query: here before the unreachable
# URL is.
assert_exit 1 "trace not writable" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "http://127.0.0.1:$DEAD" \
    --since 8h --until "$END" --save-trace "$TMP/no-such-dir/built.jsonl"
assert_match "^frugal replay: --save-trace $TMP/no-such-dir/built.jsonl: No such file or directory$" \
    "$ERR" "the unwritable trace named"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"

# A failure of the replay itself (a bad workload file beside it, a --restart-at past the
# trace's end) leaves no trace either: it is saved only once the replay stands.
printf '{"t":-1}\n' >"$TMP/broken.jsonl"
assert_exit 1 "a broken workload beside it" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --save-trace "$TMP/bad5.jsonl" "$TMP/broken.jsonl"
assert_match "^$TMP/broken.jsonl:1:" "$ERR" "the broken file named"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"
[ ! -e "$TMP/bad5.jsonl" ] && pass || fail "no trace written beside a broken workload"
assert_exit 2 "restart past the end" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 8h --until "$END" --save-trace "$TMP/bad6.jsonl" --restart-at 100
assert_match "^frugal replay: --restart-at 100: not before the end of bad6 " "$ERR" "restart refused"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"
[ ! -e "$TMP/bad6.jsonl" ] && pass || fail "no trace written past a refused --restart-at"

FAKE_PORT=$(free_port)
mkdir -p "$TMP/fake/api/v1/label/__name__" "$TMP/nokube/api/v1/label/__name__"
echo '<html>hello</html>' >"$TMP/fake/api/v1/label/__name__/values"
(cd "$TMP/fake" && exec python3 -m http.server "$FAKE_PORT" --bind 127.0.0.1) >/dev/null 2>&1 &
ALL_SERVER_PIDS+=("$!")
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$FAKE_PORT/" >/dev/null 2>&1 && break; sleep 0.1; done
assert_exit 1 "not prometheus" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "http://127.0.0.1:$FAKE_PORT" \
    --since 1h --save-trace "$TMP/bad2.jsonl"
assert_match "^frugal replay: http://127.0.0.1:$FAKE_PORT/api/v1/label/__name__/values: not a Prometheus answer: not a JSON object \(it starts with \"<html>hello</htm...\"\)$" \
    "$ERR" "not Prometheus named, with the path asked as for an HTTP error"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"
assert_exit 1 "not found" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "http://127.0.0.1:$FAKE_PORT/sub" \
    --since 1h
assert_match "not a Prometheus answer \(HTTP 404" "$ERR" "HTTP 404 named"
assert_exit 1 "a URL ending in /" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "http://127.0.0.1:$FAKE_PORT/sub//" \
    --since 1h
assert_match "^frugal replay: http://127.0.0.1:$FAKE_PORT/sub/api/v1/label/__name__/values: not a Prometheus answer \(HTTP 404" \
    "$ERR" "the URL's trailing slashes dropped before the path"
[ ! -e "$TMP/bad2.jsonl" ] && pass || fail "no trace written"

log "a Prometheus without kube-state-metrics, over mutual TLS: the missing metric is named"
PKI="$TMP/pki"
mkdir -p "$PKI"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" >/dev/null 2>&1 || fatal "openssl: CA"
make_cert() { # NAME USAGE [SAN]
    {
        echo "basicConstraints=CA:FALSE"
        echo "extendedKeyUsage=$2"
        [ -n "${3:-}" ] && echo "subjectAltName=$3"
    } >"$PKI/$1.ext"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$PKI/$1.key" \
        -out "$PKI/$1.csr" >/dev/null 2>&1 || fatal "openssl: csr $1"
    openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
        -days 2 -extfile "$PKI/$1.ext" -out "$PKI/$1.crt" >/dev/null 2>&1 || fatal "openssl: sign $1"
}
make_cert server serverAuth "IP:127.0.0.1"
make_cert client clientAuth
cat >"$TMP/prom/web.yml" <<EOF
tls_server_config:
  cert_file: $PKI/server.crt
  key_file: $PKI/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: $PKI/ca.crt
EOF
PROM2_PORT=$(free_port)
mkdir -p "$TMP/prom2"
prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom2/data" \
    --web.config.file="$TMP/prom/web.yml" --web.listen-address="127.0.0.1:$PROM2_PORT" \
    >"$TMP/prom2/log" 2>&1 &
ALL_SERVER_PIDS+=("$!")
TLS_CURL=(curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key")
for _ in $(seq 1 100); do
    "${TLS_CURL[@]}" "https://127.0.0.1:$PROM2_PORT/-/ready" >/dev/null 2>&1 && break
    sleep 0.2
done
assert_exit 1 "no kube-state-metrics" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "https://127.0.0.1:$PROM2_PORT" --since 1h --save-trace "$TMP/bad3.jsonl" \
    --ca-file "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key"
assert_match "^frugal replay: https://127.0.0.1:$PROM2_PORT has no kube_pod_created series: is kube-state-metrics scraped" \
    "$ERR" "missing metric named (TLS and the client certificate accepted)"
[ ! -e "$TMP/bad3.jsonl" ] && pass || fail "no trace written"
assert_exit 1 "no client certificate" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "https://127.0.0.1:$PROM2_PORT" --since 1h --ca-file "$PKI/ca.crt"
assert_match "^frugal replay: cannot reach https://127.0.0.1:$PROM2_PORT: " "$ERR" "refused without a client certificate"
assert_exit 1 "unknown CA" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "https://127.0.0.1:$PROM2_PORT" --since 1h --cert "$PKI/client.crt" --key "$PKI/client.key"
assert_match "^frugal replay: cannot reach https://127.0.0.1:$PROM2_PORT: " "$ERR" "server not trusted without --ca-file"

log "--bearer-token-file: the token is sent as Authorization: Bearer"
AUTH_PORT=$(free_port)
serve_python "$AUTH_PORT" <<'PY'
import http.server, sys
class H(Quiet):
    def do_GET(self):
        ok = self.headers.get("Authorization") == "Bearer s3cret"
        body = b'{"status":"success","data":["up"]}' if ok else b'{"status":"error","errorType":"unauthorized","error":"no token"}'
        if self.path.startswith("/proxy/"):  # an authenticating proxy's JSON, not Prometheus'
            ok, body = False, b'{"message":"Unauthorized"}'
        reply(self, 200 if ok else 401, body)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
printf 's3cret\n' >"$TMP/token"
assert_exit 1 "with the token" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$AUTH_PORT" --since 1h --bearer-token-file "$TMP/token"
assert_match "has no kube_pod_created series" "$ERR" "the token was accepted"
assert_exit 1 "without the token" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$AUTH_PORT" --since 1h
assert_match "Prometheus answered error: no token" "$ERR" "refused without the token, Prometheus' message shown"
assert_exit 1 "refused by a proxy" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$AUTH_PORT/proxy" --since 1h
assert_match "^frugal replay: http://127.0.0.1:$AUTH_PORT/proxy/api/v1/label/__name__/values: not a Prometheus answer \(HTTP 401\): the server asks for credentials \(user:password@ in the URL, --bearer-token-file, --cert/--key\)$" \
    "$ERR" "a proxy's JSON refusal is no Prometheus answer, and credentials are named"
assert_exit 1 "URL password refused by a proxy" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://reader:wrong@127.0.0.1:$AUTH_PORT/proxy" --since 1h
assert_match "^frugal replay: http://reader:\*\*\*@127.0.0.1:$AUTH_PORT/proxy/api/v1/label/__name__/values: not a Prometheus answer \(HTTP 401\): the server refused the user and password in the URL$" \
    "$ERR" "the refused URL password named, and hidden"
assert_exit 1 "token refused by a proxy" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$AUTH_PORT/proxy" --since 1h --bearer-token-file "$TMP/token"
assert_match "\(HTTP 401\): the server refused the --bearer-token-file token$" "$ERR" "the refused token named"
assert_exit 1 "missing token file" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$AUTH_PORT" --since 1h --bearer-token-file "$TMP/none"
assert_match "^frugal replay: --bearer-token-file $TMP/none: No such file" "$ERR" "missing token file named"
printf 's3cret\nsecond\n' >"$TMP/token2"
assert_exit 1 "a token of two lines" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$AUTH_PORT" --since 1h --bearer-token-file "$TMP/token2"
assert_match "^frugal replay: --bearer-token-file $TMP/token2: not one line of text" "$ERR" \
    "refused, not cut to its first line"

log "a range with no pods"
assert_exit 1 "empty range" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 2h --until "$((START - 3 * 3600))" --save-trace "$TMP/bad4.jsonl"
assert_match "no pod ran between" "$ERR" "empty range named"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"
[ ! -e "$TMP/bad4.jsonl" ] && pass || fail "no trace written"

log "usage errors"
assert_exit 2 "no --since" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM"
assert_match "needs --since" "$ERR" "--since required"
assert_exit 2 "bad --until" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" --since 1h --until yesterday
assert_exit 2 "a file:// URL" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "file://$TMP" --since 1h
assert_match "^frugal replay: --from-prometheus: expected an http:// or https:// URL, got file://" "$ERR" \
    "only HTTP"
assert_exit 2 "a URL with a query" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM?x=1" --since 1h
assert_match "^frugal replay: --from-prometheus: a URL with a query \(\?...\) cannot take the API path, got $PROM\?x=1$" \
    "$ERR" "a query refused"
assert_exit 2 "a URL with a fragment" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM/#frag" --since 1h
assert_match "^frugal replay: --from-prometheus: a URL with a fragment \(#...\) cannot take the API path" "$ERR" \
    "a fragment refused"
assert_exit 2 "--since alone" "$FRUGAL" replay -c "$TMP/cluster.yaml" "$TMP/expected.jsonl" --since 1h
assert_exit 2 "--since alone, without a workload" "$FRUGAL" replay -c "$TMP/cluster.yaml" --since 1h
assert_match "^frugal replay: --since, --until, --namespace, --save-trace and the access options go with --from-prometheus URL$" \
    "$ERR" "--since without --from-prometheus is named, not a missing workload"
assert_exit 2 "a --namespace too long" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" \
    --since 1h --namespace "$(printf 'a%.0s' $(seq 1 1001))"
assert_match "^frugal replay: --namespace: longer than 1000 characters$" "$ERR" "the limit said"
assert_exit 2 "--cert without --key" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" --since 1h --cert x
assert_exit 2 "TLS files on http://" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" --since 1h \
    --ca-file "$PKI/ca.crt"
assert_match "^frugal replay: --ca-file, --cert and --key need an https:// URL, got $PROM$" "$ERR" "TLS needs https"
assert_exit 1 "a CA file that is not there" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "https://127.0.0.1:$PROM2_PORT" --since 1h --ca-file "$TMP/no-such-ca.crt"
assert_match "^frugal replay: --ca-file $TMP/no-such-ca.crt: No such file or directory$" "$ERR" "the missing CA file named"

log "an error code with a JSON content type but no Prometheus error: the code is named"
ODD_PORT=$(free_port)
serve_python "$ODD_PORT" <<'PY'
import http.server, sys
class H(Quiet):
    def do_GET(self):
        if self.path.startswith("/login/"):  # a login proxy
            self.send_response(302)
            self.send_header("Location", "https://sso.example.com/auth?rd=prometheus")
            self.end_headers()
            return
        reply(self, 500, b"<html>upstream down</html>")
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
assert_exit 1 "HTTP 500" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "http://127.0.0.1:$ODD_PORT" --since 1h
assert_match "not a Prometheus answer \(HTTP 500" "$ERR" "HTTP 500 named"
assert_exit 1 "a redirect to a login" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "http://127.0.0.1:$ODD_PORT/login" --since 1h
assert_match "^frugal replay: http://127.0.0.1:$ODD_PORT/login/api/v1/label/__name__/values: HTTP 302 to https://sso.example.com/auth\?rd=prometheus: not a Prometheus answer$" \
    "$ERR" "where it redirects named"

log "a server that knows the metrics, then answers a range query with an instant vector, or fails midway"
MID_PORT=$(free_port)
serve_python "$MID_PORT" "$PROM" <<'PY'
import http.server, json, re, sys, urllib.parse, urllib.request
names = ["kube_pod_created", "kube_pod_info", "kube_pod_container_resource_requests"]
# denylisted in kube-state-metrics: not in the names, no series
denied = re.compile(r"\b(kube_pod_owner|kube_pod_nodeselectors|kube_pod_tolerations|kube_pod_init_container_resource_requests)\b")
class H(Quiet):
    def do_GET(self):
        code, body = 200, {"status": "success", "data": names}
        if self.path.startswith("/proxy/"):  # the real Prometheus, its answers warned
            body = json.load(urllib.request.urlopen(sys.argv[2] + self.path[len("/proxy"):]))
            body["warnings"] = ["query hit a shard that is down"]
        elif self.path.startswith("/denied/"):  # the real Prometheus, some series denylisted
            body = json.load(urllib.request.urlopen(sys.argv[2] + self.path[len("/denied"):]))
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("query", [""])[0]
            if "/label/" in self.path:
                body["data"] = [n for n in body["data"] if not denied.fullmatch(n)]
            elif denied.search(query):
                body["data"]["result"] = []
        elif self.path.startswith("/cut/api/v1/query_range"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"we')
            return
        elif self.path.startswith("/vector/api/v1/query_range"):
            body = {"status": "success", "data": {"resultType": "vector", "result": []}}
        elif self.path.startswith("/warn/api/v1/query_range"):
            body = {"status": "success", "warnings": ["query hit a shard that is down"],
                    "data": {"resultType": "matrix", "result": []}}
        elif self.path.startswith("/midway/api/v1/query_range"):
            body = {"status": "success", "data": {"resultType": "matrix", "result": []}}
            if "kube_pod_created" not in self.path:  # every window of the first series, then 503
                code, body = 503, None
        if body is None:
            reply(self, code, b"busy", "text/plain")
        else:
            reply(self, code, json.dumps(body).encode())
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
assert_exit 1 "an instant vector" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$MID_PORT/vector" --since 1h
assert_match "not a Prometheus answer to a range query: data.resultType is \"vector\", not matrix" "$ERR" \
    "the wrong answer named, not read as no pods"
assert_exit 1 "no pods, and Prometheus warned" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$MID_PORT/warn" --since 1h
assert_match "no pod ran between .*; Prometheus' answer may be partial: query hit a shard that is down \([0-9]+ of its answers warned\)$" \
    "$ERR" "the warning that may explain it in the error's line"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"
assert_ok "pods, and Prometheus warned" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$MID_PORT/proxy" --since 8h --until "$END" --seeds 1 --strategy random
assert_match "^frugal replay: warning: Prometheus' answer may be partial: query hit a shard that is down \([0-9]+ of its answers warned\)$" \
    "$ERR" "the warning said once the trace stands"
assert_match "^prometheus: 8.0 h, 1 seeds" "$OUT" "the report stands"
# On a terminal (script gives one), the progress line is cleared before the error.
script -qec "$FRUGAL replay -c $TMP/cluster.yaml --from-prometheus http://127.0.0.1:$MID_PORT/midway --since 20h" \
    /dev/null >"$TMP/midway.tty" 2>&1
if python3 -c 'import sys; t = open(sys.argv[1], "rb").read(); sys.exit(0 if b"queries (kube_pod_created)\x1b[K\r\x1b[Kfrugal replay: http://127.0.0.1:" + sys.argv[2].encode() + b"/midway/api/v1/query_range: not a Prometheus answer (HTTP 503, not JSON)" in t else 1)' \
    "$TMP/midway.tty" "$MID_PORT"; then
    pass
else
    fail "the error after a progress line is a line of its own: $(od -c "$TMP/midway.tty" | head -5)"
fi

assert_exit 1 "an answer cut short" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$MID_PORT/cut" --since 1h
assert_match "^frugal replay: http://127.0.0.1:$MID_PORT/cut/api/v1/query_range: the kube_pod_created query: not a Prometheus answer: not JSON \(cut short\?\) at line 1, column [0-9]+$" \
    "$ERR" "a cut answer said in our words, with the path asked"

log "queries asked four at once: the first failure in the order asked is the one said"
ORDER_PORT=$(free_port)
serve_python "$ORDER_PORT" "$TMP/inflight.txt" <<'PY'
import http.server, json, sys, threading, time
lock, state = threading.Lock(), {"now": 0, "max": 0}
class H(Quiet):
    def do_GET(self):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
            open(sys.argv[2], "w").write(str(state["max"]))
        code, body = 200, {"status": "success", "data": ["kube_pod_created", "kube_pod_info",
                                                         "kube_pod_container_resource_requests"]}
        if "/query_range" in self.path:
            body = {"status": "success", "data": {"resultType": "matrix", "result": []}}
            time.sleep(0.2)
            # kube_pod_start_time is asked before kube_pod_completion_time, but answers last
            if "kube_pod_start_time" in self.path:
                time.sleep(1.5)
                code, body = 422, {"status": "error", "errorType": "execution", "error": "start failed"}
            elif "kube_pod_completion_time" in self.path:
                code, body = 422, {"status": "error", "errorType": "execution", "error": "completion failed"}
        with lock:  # before the answer: its client may ask its next query as soon as it has it
            state["now"] -= 1
        reply(self, code, json.dumps(body).encode())
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
assert_exit 1 "a later query fails first" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$ORDER_PORT" --since 12h --save-trace "$TMP/order.jsonl"
assert_match "^frugal replay: http://127.0.0.1:$ORDER_PORT/api/v1/query_range: the kube_pod_start_time query: Prometheus answered error: start failed$" \
    "$ERR" "the failure of the query asked first is said, as if asked one by one"
assert_eq 1 "$(echo "$ERR" | wc -l | tr -d ' ')" "one line"
assert_eq 4 "$(cat "$TMP/inflight.txt")" "four queries in flight at most, and at once"
[ ! -e "$TMP/order.jsonl" ] && pass || fail "no trace written"

log "kube_pod_owner and other series denylisted: owners from kube_pod_info, one warning each"
assert_ok "series denylisted" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$MID_PORT/denied/" --since 8h --until "$END" --seeds 1 \
    --strategy random --save-trace "$TMP/denied.jsonl"
assert_match "^denied: 8.0 h, 1 seeds, [0-9]+ pods per seed, .*2 DaemonSet and static pods left out" "$OUT" \
    "node-exporter and the static kube-proxy left out by kube_pod_info's created_by_kind"
for w in "kube_pod_owner series in the range: owners taken from kube_pod_info's created_by_kind and created_by_name" \
    "kube_pod_nodeselectors series in the range: pods replayed without node selectors" \
    "kube_pod_tolerations series in the range: pods replayed without tolerations" \
    "kube_pod_init_container_resource_requests series in the range: init containers taken as requesting nothing"; do
    assert_match "^frugal replay: warning: no $w$" "$ERR" "the missing series named, and what stands in"
done
assert_eq 4 "$(grep -c 'warning: no ' <<<"$ERR")" "one line each"
python3 - "$TMP/expected.jsonl" "$TMP/denied.jsonl" <<'PY' && pass || fail "the owners from created_by_kind and created_by_name"
import json, sys
def owners(p):
    return {(d["pod"]["metadata"]["namespace"], d["pod"]["metadata"]["name"]): d["pod"]["metadata"].get("ownerReferences")
            for d in map(json.loads, filter(str.strip, open(p)))}
want, got = owners(sys.argv[1]), owners(sys.argv[2])
print("\n".join("%s: %s != %s" % (k, want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)), file=sys.stderr)
sys.exit(0 if want == got else 1)
PY
assert_no_match "warning: no " "$FROM_PROM_ERR" "no such warning when every series is there"

log "--since beyond a trace's longest span"
assert_exit 2 "--since 88000h" "$FRUGAL" replay -c "$TMP/cluster.yaml" --from-prometheus "$PROM" --since 88000h
assert_match "^frugal replay: --since: expected a duration from 1s to 87840h, got \"88000h\"$" "$ERR" "the limit said"

log "a CA file curl cannot read as one"
echo "not a certificate" >"$TMP/garbage-ca.crt"
assert_exit 1 "a garbage CA file" "$FRUGAL" replay -c "$TMP/cluster.yaml" \
    --from-prometheus "https://127.0.0.1:$PROM2_PORT" --since 1h --ca-file "$TMP/garbage-ca.crt"
assert_match "^frugal replay: --ca-file $TMP/garbage-ca.crt: no CA certificate curl can read$" "$ERR" "the CA file named"

finish
