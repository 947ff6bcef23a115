#!/usr/bin/env python3
"""Check every overlay of deploy/ against itself, against the config frugal loads and
against cluster-autoscaler's Helm chart; write the top overlay's config for a local
replay with the same listener layout.

usage: deploy_check.py DEPLOY_DIR PKI STATE_DIR OUT_CONFIG

An overlay is every directory under DEPLOY_DIR (DEPLOY_DIR included) whose
kustomization renders the Deployment frugal: a new overlay is found, never skipped. Each
is rendered with `kubectl kustomize`, together with the shared parts it does not include
itself (cert-manager/, cluster-autoscaler/) and the monitoring/ Component, and checked:
probes hit the ops endpoint or a plaintext health listener its own config defines; every
port used (probes, the Service, the NetworkPolicies, CA's flags and cloud-config, the
ServiceMonitor) exists where it must; the container memory limit holds the budget frugal
will use plus MEMORY_MARGIN; certificates outlive their renewal and CA's restarts; the
hardening; CA's chart values render a Deployment. Each problem names the overlay, the
manifest's source file(s) and the field.

The replay config (top overlay only) has each listener on a free loopback port (same
order, services and TLS layout), each Secret mount path pointed at PKI/<secret name>
(scripts/dev-certs.sh) and the state under STATE_DIR; FRUGAL_TEST_PORTS=LO-HI takes
the ports from that range. Prints shell assignments for the
test (ports, client files) on stdout, one line per problem on stderr; exit 1 when
anything disagrees."""
import os
import posixpath
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile

import yaml

# What the container needs beside frugal's memory budget: its code, the config, the
# state, the calls being decoded, gRPC's threads (docs/limits.md). Unset, the budget is
# 75 % of the container's limit, which leaves a quarter.
MEMORY_MARGIN = 64 << 20
BUDGET_SHARE = 0.75
# docs/deploy.md, "CA's client certificate": without the reloader, CA must restart at
# least this often; its client certificate must stay valid that long after a renewal.
CA_RESTART_CADENCE_HOURS = 60 * 24
CA_CLIENT_SECRET = "cluster-autoscaler-frugal-client"
SHARED_PARTS = ("cert-manager", "cluster-autoscaler")
COMPONENT = "monitoring"
VALUES = ("cluster-autoscaler/values.yaml", "cluster-autoscaler/reloader-values.yaml")
DOCKERFILE = "Dockerfile"
# docs/deploy.md installs the chart as this release and names CA's Deployment so.
CA_RELEASE = "cluster-autoscaler"
# The cluster-autoscaler the values were checked against (chart 9.59.0's appVersion; the
# values' image.tag when set): its minor is the control plane's.
CA_APP_VERSION = "1.35.0"
# Where the image's libvirt user-data templates come from (CMakeLists.txt installs them).
USER_DATA_INSTALLED = "/usr/local/share/frugal/libvirt/"
USER_DATA_SOURCE = "providers/hooks/libvirt"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CA_DEPLOYMENT = "cluster-autoscaler"

problems = []


def check(cond, msg):
    if not cond:
        problems.append(msg)
    return cond


def bail():
    """Report every problem found so far and exit 1."""
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    sys.exit(1)


def under(path, mount):
    return posixpath.commonpath([path, mount]) == mount


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def quantity_bytes(q):
    """A Kubernetes quantity (64Mi, 1G, 1073741824) in bytes; None if not one."""
    m = re.fullmatch(r"([0-9.]+)([KMGTPE]i?)?", str(q).strip())
    if not m:
        return None
    unit = m.group(2) or ""
    power = " KMGTPE".index(unit[:1]) if unit else 0
    return int(float(m.group(1)) * ((1024 if unit.endswith("i") else 1000) ** power))


def hours(d):
    """A Go duration as cert-manager takes it (2160h, 720h0m0s, 90m) in hours."""
    total, rest = 0.0, str(d)
    for value, unit in re.findall(r"([0-9.]+)(h|m|s)", rest):
        total += float(value) / {"h": 1, "m": 60, "s": 3600}[unit]
    if not re.fullmatch(r"([0-9.]+(h|m|s))+", rest):
        return None
    return total


def load_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kustomization_of(d):
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        if os.path.isfile(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


def sources(root, d, kind, name, seen=None):
    """The files reachable from the kustomization in d (resources, patches, components)
    that define or patch kind/name, relative to root."""
    seen = seen if seen is not None else set()
    k = kustomization_of(d)
    if k is None or d in seen:
        return []
    seen.add(d)
    spec = load_docs(k)[0]
    found = []
    entries = list(spec.get("resources", [])) + list(spec.get("components", []))
    entries += [p["path"] for p in spec.get("patches", []) if isinstance(p, dict) and "path" in p]
    entries += list(spec.get("patchesStrategicMerge", []))
    for e in entries:
        p = os.path.normpath(os.path.join(d, e))
        if os.path.isdir(p):
            found += sources(root, p, kind, name, seen)
        elif os.path.isfile(p):
            for doc in load_docs(p):
                if doc.get("kind") == kind and doc.get("metadata", {}).get("name") == name:
                    found.append(os.path.relpath(p, root))
                    break
    for p in spec.get("patches", []) + spec.get("patchesJson6902", []):
        if patches_by_target(p, kind, name):
            f = os.path.join(d, p["path"]) if "path" in p else k
            found.append(os.path.relpath(os.path.normpath(f), root))
    for gen in spec.get("configMapGenerator", []):
        if kind == "ConfigMap" and gen.get("name") == name:
            # a later generator (behavior: replace) wins over the base's
            found = [os.path.relpath(os.path.join(d, f.split("=", 1)[-1]), root) for f in gen.get("files", [])]
    return list(dict.fromkeys(found))


def patches_by_target(patch, kind, name):
    """Whether a patch that the kustomization names kind/name by its target, or writes
    inline (whose strategic-merge document then names it), patches kind/name. A patch
    file without a target is found by its document, like a resource."""
    if not isinstance(patch, dict):
        return False
    target = patch.get("target")
    if target:  # kustomize reads the target's name as a regular expression
        return target.get("kind", kind) == kind and re.fullmatch(target.get("name", ".*"), name) is not None
    if "patch" not in patch:
        return False
    docs = [d for d in yaml.safe_load_all(patch["patch"]) if isinstance(d, dict)]
    return any(d.get("kind") == kind and d.get("metadata", {}).get("name") == name for d in docs)


def dollar_keys(node, path=""):
    """The paths of the keys starting with '$' in node: strategic-merge directives
    kustomize left in the output, which the API server refuses as unknown fields."""
    if isinstance(node, dict):
        for k, v in node.items():
            sub = f"{path}.{k}" if path else str(k)
            if str(k).startswith("$"):
                yield sub
            yield from dollar_keys(v, sub)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from dollar_keys(v, f"{path}[{i}]")


def render(path):
    r = subprocess.run(["kubectl", "kustomize", path], capture_output=True, text=True)
    if r.returncode != 0:
        problems.append(f"{path}: kubectl kustomize failed: {r.stderr.strip()}")
        return None
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def discover(root):
    """Every overlay under root: a kustomization (not a Component) rendering Deployment
    frugal. Shared parts and Components are not overlays."""
    overlays = []
    for d, dirs, _ in os.walk(root):
        dirs.sort()
        k = kustomization_of(d)
        if k is None or load_docs(k)[0].get("kind") == "Component":
            continue
        docs = render(d)
        if docs and any(x.get("kind") == "Deployment" and x["metadata"]["name"] == "frugal" for x in docs):
            overlays.append(d)
    return overlays


def compose(root, overlay, docs, tmp):
    """The overlay with the shared parts it lacks and the monitoring Component, rendered."""
    kinds = {(x.get("kind"), x["metadata"]["name"]) for x in docs}
    resources = [overlay]
    if not any(k == "Certificate" for k, _ in kinds):
        resources.append(os.path.join(root, "cert-manager"))
    if ("Secret", "frugal-cloud-config") not in kinds:
        resources.append(os.path.join(root, "cluster-autoscaler"))
    components = []
    if ("PrometheusRule", "frugal") not in kinds and os.path.isdir(os.path.join(root, COMPONENT)):
        components.append(os.path.join(root, COMPONENT))
    d = tempfile.mkdtemp(dir=tmp)
    with open(os.path.join(d, "kustomization.yaml"), "w") as f:
        yaml.safe_dump({"resources": [os.path.relpath(r, d) for r in resources],
                        "components": [os.path.relpath(c, d) for c in components]}, f)
    return render(d)


def chart_renders_deployment(values):
    """The condition of templates/deployment.yaml of the cluster-autoscaler chart 9.59.0
    (app 1.35.0): `if or (or .Values.autoDiscovery.clusterName
    .Values.autoDiscovery.namespace .Values.autoDiscovery.labels)
    .Values.autoscalingGroups`; empty strings, lists and maps are false in Go templates."""
    ad = values.get("autoDiscovery") or {}
    return bool(ad.get("clusterName") or ad.get("namespace") or ad.get("labels")
                or values.get("autoscalingGroups"))


def chart_fullname(values, release):
    """The name of the chart's Deployment: its _helpers.tpl cluster-autoscaler.fullname
    (fullnameOverride, else RELEASE-NAME where NAME is nameOverride or
    CLOUDPROVIDER-cluster-autoscaler, the release alone when it is NAME; at most 63
    characters, no trailing '-')."""
    if values.get("fullnameOverride"):
        return str(values["fullnameOverride"])[:63].rstrip("-")
    name = values.get("nameOverride") or f"{values.get('cloudProvider')}-cluster-autoscaler"
    return (name if name == release else f"{release}-{name}")[:63].rstrip("-")


def minor(version):
    """1.35 of v1.35, 1.35.0 or v1.35.2, as (1, 35); None if not a version."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(\.\d+)?", str(version).strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_user_data(root, cfg, values, cfg_problem):
    """The image's kubeadm user-data: the Kubernetes minor kubelet and kubeadm come from
    is the hook parameter kubernetes_version (the template's default when unset), and it
    lies in the skew a kubelet may have to the control plane CA serves: the same minor or
    up to three older, never newer. kubeadm's join config version fits it."""
    provider = cfg.get("provider") or {}
    params = provider.get("params") or {}
    path = str(params.get("user_data", ""))
    if not path.startswith(USER_DATA_INSTALLED):
        return
    source = os.path.join(REPO, USER_DATA_SOURCE, path[len(USER_DATA_INSTALLED):])
    rel = os.path.relpath(source, REPO)
    if not os.path.isfile(source):
        cfg_problem("provider.params.user_data", f"{path}: no {rel} installs it")
        return
    text = open(source, encoding="utf-8").read()
    for pinned in sorted(set(re.findall(r"pkgs\.k8s\.io/core:/stable:/(v\d+\.\d+)/", text))):
        cfg_problem("provider.params.user_data", f"{rel} pins Kubernetes {pinned} instead of taking the hook "
                    "parameter kubernetes_version (@ENV:FRUGAL_PARAM_KUBERNETES_VERSION@)")
    default = re.search(r"@ENV:FRUGAL_PARAM_KUBERNETES_VERSION@.*?:-(v\d+\.\d+)\}", text)
    if "pkgs.k8s.io" in text and default is None:
        cfg_problem("provider.params.user_data", f"{rel}: no default for kubernetes_version (${{VAR:-vX.Y}})")
    ca = minor((values.get("image") or {}).get("tag") or CA_APP_VERSION)
    kubeadm_api = re.search(r"apiVersion: kubeadm\.k8s\.io/(v1beta\d+)", text)
    groups = [("provider.params", params)] + [
        (f"node_groups[{g.get('id')}].provider_params", dict(params, **(g.get("provider_params") or {})))
        for g in cfg.get("node_groups") or []]
    for where, p in groups:
        field = f"{where}.kubernetes_version"
        version = p.get("kubernetes_version") or (default.group(1) if default else None)
        v = minor(version) if version else None
        if version is None:
            continue
        if v is None:
            cfg_problem(field, f"{version}: not vMAJOR.MINOR")
            continue
        if not (v[0] == ca[0] and ca[1] - 3 <= v[1] <= ca[1]):
            cfg_problem(field, f"{version}: kubelet {v[0]}.{v[1]} is outside the skew a kubelet may have to a "
                        f"{ca[0]}.{ca[1]} control plane (cluster-autoscaler {ca[0]}.{ca[1]}, {VALUES[0]}): "
                        f"{ca[0]}.{ca[1] - 3} to {ca[0]}.{ca[1]}")
        if kubeadm_api and ((kubeadm_api.group(1) == "v1beta3" and v >= (1, 36))
                            or (kubeadm_api.group(1) == "v1beta4" and v < (1, 31))):
            cfg_problem(field, f"{version}: kubeadm {v[0]}.{v[1]} does not read {rel}'s kubeadm.k8s.io/"
                        f"{kubeadm_api.group(1)} (v1beta3 until 1.35, v1beta4 from 1.31)")


def merge(a, b):
    """Helm's merge of values files: b over a, maps merged key by key."""
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def option(args, short, long):
    """The value of option short/long (-u 1, --uid 1, --uid=1) in args, or None."""
    for i, a in enumerate(args):
        if a in (short, long) and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(long + "="):
            return a.split("=", 1)[1]
    return None


def check_image(root):
    """The final stage of the Dockerfile: the user it runs as must have a passwd entry
    (ssh refuses to run for a uid without one, and reads ~/.ssh from the entry's home,
    never from $HOME) and HOME must be that home. Returns {uid, gid, home} of the user,
    or None when the Dockerfile says too little."""
    path = os.path.join(root, DOCKERFILE)
    if not check(os.path.isfile(path), f"deploy/{DOCKERFILE}: missing"):
        return None
    text = open(path, encoding="utf-8").read()
    lines = re.sub(r"\\\n", " ", text).splitlines()
    final = [l.strip() for l in lines[max(i for i, l in enumerate(lines) if re.match(r"\s*FROM\s", l, re.I)):]]
    src = f"deploy/{DOCKERFILE}"
    users, groups, env, user = {}, {}, {}, None
    for l in final:
        word, _, rest = l.partition(" ")
        word = word.upper()
        if word == "RUN":
            for cmd in re.split(r"&&|;|\|\|", rest):
                args = shlex.split(cmd, comments=True)
                if args and args[0] in ("useradd", "adduser") and len(args) > 1:
                    users[args[-1]] = {"uid": option(args, "-u", "--uid"), "gid": option(args, "-g", "--gid"),
                                       "home": option(args, "-d", "--home-dir") or option(args, "-d", "--home")}
                if args and args[0] in ("groupadd", "addgroup") and len(args) > 1:
                    groups[args[-1]] = option(args, "-g", "--gid")
        elif word == "ENV":
            for kv in shlex.split(rest):
                if "=" in kv:
                    k, v = kv.split("=", 1)
                    env[k] = v
            if "=" not in rest.split(" ", 1)[0] and len(rest.split(None, 1)) == 2:
                k, v = rest.split(None, 1)
                env[k] = v.strip()
        elif word == "USER":
            user = rest.strip()
    if not check(user is not None, f"{src}: the final stage sets no USER (frugal must not run as root)"):
        return None
    uname, _, ugroup = user.partition(":")
    entry = None
    for name, u in users.items():
        if uname in (name, u["uid"]):
            entry = dict(u, name=name)
            entry["gid"] = groups.get(entry["gid"], entry["gid"])  # a group name, resolved
    if not check(entry is not None,
                 f"{src}: USER {user}: no useradd gives that user a passwd entry, so ssh refuses to run "
                 "(\"No user exists for uid\") and no qemu+ssh:// hypervisor can be reached"):
        return None
    if ugroup:
        gid = groups.get(ugroup, ugroup)
        check(gid == entry["gid"], f"{src}: USER {user}: group {gid} is not the primary group {entry['gid']} of user {entry['name']}")
    check(entry["uid"] is not None and entry["uid"].isdigit(),
          f"{src}: useradd {entry['name']}: no numeric --uid (the Deployment's runAsUser must name it)")
    check(entry["home"] is not None, f"{src}: useradd {entry['name']}: no --home-dir")
    check(env.get("HOME") == entry["home"],
          f"{src}: ENV HOME: {env.get('HOME')} is not the home {entry['home']} of user {entry['name']}, where ssh "
          "reads ~/.ssh")
    return entry


def check_values(root):
    """CA's chart values: the chart's gate, and the optional reloader values."""
    values = yaml.safe_load(open(os.path.join(root, VALUES[0])))
    check(chart_renders_deployment(values),
          f"{VALUES[0]}: autoDiscovery.clusterName, .namespace, .labels or autoscalingGroups: "
          "none is set, so the chart renders no Deployment (its templates/deployment.yaml)")
    name = chart_fullname(values, CA_RELEASE)
    check(name == CA_DEPLOYMENT,
          f"{VALUES[0]}: fullnameOverride: the chart names CA's Deployment {name} (release {CA_RELEASE}), "
          f"not {CA_DEPLOYMENT} as docs/deploy.md has it")
    check("autoscalingGroups" not in values,
          f"{VALUES[0]}: autoscalingGroups: the chart turns it into --nodes flags, which "
          "externalgrpc does not take (the groups are frugal's)")
    reloader_path = os.path.join(root, VALUES[1])
    if check(os.path.isfile(reloader_path), f"{VALUES[1]}: missing (the reloader option)"):
        reloader = yaml.safe_load(open(reloader_path))
        ann = (reloader.get("deployment") or {}).get("annotations") or {}
        secrets = ann.get("secret.reloader.stakater.com/reload", "")
        check(CA_CLIENT_SECRET in [s.strip() for s in secrets.split(",")]
              or ann.get("reloader.stakater.com/auto") == "true",
              f"{VALUES[1]}: deployment.annotations: no reloader annotation restarting CA when "
              f"Secret {CA_CLIENT_SECRET} changes")
        check(chart_renders_deployment(merge(values, reloader)), f"{VALUES[1]}: merged values lose the chart's gate")
    return values


def check_overlay(root, overlay, docs, values, image):
    """Every check of one rendered overlay; returns what the replay needs."""
    name = os.path.relpath(overlay, root)
    name = "deploy/" if name == "." else f"deploy/{name}/"

    before = len(problems)

    def problem(kind, obj, field, msg):
        found = sources(root, overlay, kind, obj)
        for part in SHARED_PARTS + (COMPONENT,):
            found = found or sources(root, os.path.join(root, part), kind, obj)
        src = ", ".join(found) or "?"
        problems.append(f"{name}: {kind} {obj} ({src}): {field}: {msg}")

    def one(kind, obj=None):
        found = [d for d in docs if d.get("kind") == kind and (obj is None or d["metadata"]["name"] == obj)]
        if not found:
            problems.append(f"{name}: no {kind} {obj or ''} in the rendered manifests")
            return None
        return found[0]

    dep = one("Deployment", "frugal")
    pod = dep["spec"]["template"]["spec"]
    (ctr,) = pod["containers"]
    cpath = "spec.template.spec.containers[frugal]"
    mounts = {m["mountPath"]: m for m in ctr["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    ns = dep["metadata"]["namespace"]

    def dep_problem(field, msg):
        problem("Deployment", "frugal", field, msg)

    def volume_at(path):
        for mp, m in mounts.items():
            if under(path, mp):
                return mp, volumes[m["name"]]
        return None, None

    # hardening
    sec = pod.get("securityContext", {})
    # the image's user: the pod runs as it, and its HOME is the user's home, where ssh
    # reads the identity and known_hosts the hook writes
    if image is not None:
        who = f"the image's user {image['name']} ({image['uid']}:{image['gid']}, deploy/{DOCKERFILE})"
        run_as = ctr.get("securityContext", {}).get("runAsUser", sec.get("runAsUser"))
        run_group = ctr.get("securityContext", {}).get("runAsGroup", sec.get("runAsGroup"))
        if str(run_as) != str(image["uid"]):
            dep_problem("spec.template.spec.securityContext.runAsUser",
                        f"{run_as} is not the uid of {who}: ssh refuses a uid without a passwd entry")
        if run_group is not None and str(run_group) != str(image["gid"]):
            dep_problem("spec.template.spec.securityContext.runAsGroup", f"{run_group} is not the group of {who}")
        home = {e["name"]: e.get("value") for e in ctr.get("env", [])}.get("HOME", image["home"])
        if home != image["home"]:
            dep_problem(f"{cpath}.env[HOME]", f"{home} is not the home {image['home']} of {who}: ssh reads ~/.ssh "
                        "from the passwd entry, never from $HOME")
    before = len(problems)  # what follows is checked whatever the image says
    for ok, field in ((pod.get("priorityClassName") == "system-cluster-critical", "spec.template.spec.priorityClassName"),
                      (pod.get("automountServiceAccountToken") is False, "spec.template.spec.automountServiceAccountToken"),
                      (sec.get("runAsNonRoot") is True, "spec.template.spec.securityContext.runAsNonRoot"),
                      (sec.get("seccompProfile", {}).get("type") == "RuntimeDefault", "spec.template.spec.securityContext.seccompProfile"),
                      (ctr["securityContext"].get("allowPrivilegeEscalation") is False, f"{cpath}.securityContext.allowPrivilegeEscalation"),
                      (ctr["securityContext"].get("readOnlyRootFilesystem") is True, f"{cpath}.securityContext.readOnlyRootFilesystem"),
                      (ctr["securityContext"].get("capabilities", {}).get("drop") == ["ALL"], f"{cpath}.securityContext.capabilities.drop")):
        if not ok:
            dep_problem(field, "hardening missing")
    if pod.get("terminationGracePeriodSeconds", 30) <= 10 + 5:
        dep_problem("spec.template.spec.terminationGracePeriodSeconds", "must exceed the 10 s drain and the final write")
    # what the API server would refuse: a directive left as a key, a rolling-update block
    # under another strategy (what follows is checked all the same)
    refused = len(problems)
    for d in docs:
        for key in dollar_keys(d):
            problem(d.get("kind"), d.get("metadata", {}).get("name"), key,
                    "a patch directive kustomize did not apply, left as a field the API server refuses")
    strategy = dep["spec"].get("strategy") or {}
    if set(strategy) - {"type", "rollingUpdate"}:
        dep_problem("spec.strategy", f"unknown fields {sorted(set(strategy) - {'type', 'rollingUpdate'})}")
    if strategy.get("type", "RollingUpdate") != "RollingUpdate" and "rollingUpdate" in strategy:
        dep_problem("spec.strategy.rollingUpdate", f"may only be set with type RollingUpdate, not {strategy.get('type')}")
    before += len(problems) - refused
    for m in ctr["volumeMounts"]:
        if "subPath" in m:
            dep_problem(f"{cpath}.volumeMounts[{m['name']}].subPath", "a subPath mount never sees updates")

    # the config: args -> ConfigMap volume
    args = ctr["args"]
    if args[:2] != ["serve", "-c"]:
        dep_problem(f"{cpath}.args", f"{args}: not serve -c FILE")
        return None
    cfg_path = args[2]
    mp, vol = volume_at(cfg_path)
    if vol is None or "configMap" not in vol:
        dep_problem(f"{cpath}.args", f"{cfg_path} is not on a ConfigMap volume")
        return None
    cm_name = vol["configMap"]["name"]
    cm = one("ConfigMap", cm_name)
    key = posixpath.relpath(cfg_path, mp)
    if cm is None or key not in cm.get("data", {}):
        problems.append(f"{name}: ConfigMap {cm_name} has no key {key}")
        return None
    cfg = yaml.safe_load(cm["data"][key])
    cfg_src = ", ".join(sources(root, overlay, "ConfigMap", cm_name)) or f"ConfigMap {cm_name}"

    def cfg_problem(field, msg):
        problems.append(f"{name}: {cfg_src}: {field}: {msg}")

    # the state: a file on a PVC with one writer, or etcd with several replicas
    state = cfg.get("state") or {}
    pvcs = [d for d in docs if d.get("kind") == "PersistentVolumeClaim"]
    if state.get("backend") == "etcd":
        if dep["spec"].get("replicas", 1) < 2:
            dep_problem("spec.replicas", "the etcd state is for several replicas")
        if dep["spec"].get("strategy", {}).get("type") != "RollingUpdate":
            dep_problem("spec.strategy.type", "replicas on etcd roll one at a time (RollingUpdate)")
        if pvcs:
            problems.append(f"{name}: a PersistentVolumeClaim, but the state is in etcd")
        pdb = [d for d in docs if d.get("kind") == "PodDisruptionBudget"]
        if not pdb:
            problems.append(f"{name}: no PodDisruptionBudget for the replicas")
        elif pdb[0]["spec"].get("minAvailable", 0) >= dep["spec"].get("replicas", 1):
            problem("PodDisruptionBudget", pdb[0]["metadata"]["name"], "spec.minAvailable",
                    "not below spec.replicas: a drain could never evict one")
        for f in (state.get("tls") or {}).values():
            if volume_at(f)[1] is None:
                cfg_problem("state.tls", f"{f} is on no volume")
    else:
        if dep["spec"].get("replicas", 1) != 1 or dep["spec"].get("strategy", {}).get("type") != "Recreate":
            dep_problem("spec.replicas, spec.strategy.type", "a state file has one writer: 1 replica, Recreate")
        state_file = cfg.get("state_file") or state.get("path")
        smp, svol = volume_at(state_file or "/")
        if state_file is None or svol is None or "persistentVolumeClaim" not in svol:
            cfg_problem("state_file", f"{state_file} is not on a PersistentVolumeClaim")
        elif not any(p["metadata"]["name"] == svol["persistentVolumeClaim"]["claimName"] for p in pvcs):
            problems.append(f"{name}: no PersistentVolumeClaim {svol['persistentVolumeClaim']['claimName']}")
        # The first rollout must start on the new volume, and no later one afresh.
        if "--init-state" in args:
            dep_problem(f"{cpath}.args", "--init-state: every start whose state file is missing would start afresh "
                        "(a changed state_file, a lost file); --init-new-volume initialises a new volume only")
        elif "--init-new-volume" not in args:
            dep_problem(f"{cpath}.args", "no --init-new-volume: the first rollout would crash-loop on the new volume")

    # the provider: the exec hook on a volume, its credentials on a Secret, room to write
    provider = cfg.get("provider") or {}
    if provider.get("kind") != "exec":
        cfg_problem("provider.kind", f"{provider.get('kind', 'simulated')}: deploy/ runs the exec hook (the simulated "
                    "provider makes no machines)")
    else:
        hmp, hvol = volume_at(provider.get("command", "/"))
        if hvol is None or not ("configMap" in hvol or "secret" in hvol):
            cfg_problem("provider.command", f"{provider.get('command')} is not on a ConfigMap or Secret volume")
        elif not (hvol.get("configMap") or hvol.get("secret")).get("defaultMode", 0o644) & 0o111:
            dep_problem(f"spec.template.spec.volumes[{hvol['name']}].defaultMode", "the hook is not executable")
        check_user_data(root, cfg, values, cfg_problem)
        if str(provider.get("reconcile_interval", "0")).strip() in ("0", "0s", "0m", "0h", ""):
            cfg_problem("provider.reconcile_interval", "unset: machines that vanish (a host failure, a manual "
                        "delete) are never replaced and leaked ones never reported (docs/hooks.md, \"Reconciliation\")")
        for var, f in (provider.get("env_from_files") or {}).items():
            fmp, fvol = volume_at(f)
            if fvol is None or "secret" not in fvol:
                cfg_problem(f"provider.env_from_files.{var}", f"{f} is not on a Secret volume")
        env = {e["name"]: e.get("value") for e in ctr.get("env", [])}
        for what, path in (("/tmp", "/tmp"), ("HOME", env.get("HOME"))):
            wmp, wvol = volume_at(path) if path else (None, None)
            if wvol is None or "emptyDir" not in wvol or mounts[wmp].get("readOnly"):
                dep_problem(f"{cpath}.volumeMounts", f"{what} ({path}) is not a writable emptyDir: the root filesystem is read-only")

    # listeners: roles, ports, TLS files on Secret volumes issued by cert-manager
    certs = {c["spec"]["secretName"]: c for c in docs if c.get("kind") == "Certificate"}
    issuers = {i["metadata"]["name"]: i for i in docs if i.get("kind") in ("Issuer", "ClusterIssuer")}
    container_ports = {p["containerPort"]: p.get("name") for p in ctr.get("ports", [])}
    by_name = {v: k for k, v in container_ports.items()}
    aliases = {"grpc.health.v1.Health": "health", "grpcplugin.Expander": "expander",
               "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider": "cloudprovider",
               "frugal.v1.Autoprovisioning": "autoprovisioning"}
    roles, bound = {}, {}
    for i, l in enumerate(cfg.get("listen", [])):
        services = {aliases.get(s, s) for s in l.get("services", ["cloudprovider", "expander", "autoprovisioning", "health"])}
        port = port_of(l["address"])
        bound[port] = f"listen[{i}]"
        if port not in container_ports:
            dep_problem(f"{cpath}.ports", f"no containerPort {port} for {cfg_src} listen[{i}].address")
        tls = l.get("tls")
        if services <= {"health"}:
            if tls is not None:
                cfg_problem(f"listen[{i}].tls", "the probe listener must be plaintext (probes send no certificate)")
            roles["health"] = l
        if "cloudprovider" in services:
            if tls is None or "client_ca" not in tls:
                cfg_problem(f"listen[{i}].tls.client_ca", "the cloudprovider listener must require client certificates")
            roles["cloudprovider"] = l
        if "expander" in services:
            if tls is None or "client_ca" in tls:
                cfg_problem(f"listen[{i}].tls", "the expander listener must be TLS without client_ca (CA sends no certificate)")
            roles["expander"] = l
        for k, f in (tls or {}).items():
            fmp, fvol = volume_at(f)
            if fvol is None or "secret" not in fvol:
                cfg_problem(f"listen[{i}].tls.{k}", f"{f} is not on a Secret volume")
                continue
            secret = fvol["secret"]["secretName"]
            if secret not in certs:
                cfg_problem(f"listen[{i}].tls.{k}", f"Secret {secret} is issued by no Certificate")
            if posixpath.basename(f) not in ("tls.crt", "tls.key", "ca.crt"):
                cfg_problem(f"listen[{i}].tls.{k}", f"{f}: not a cert-manager key")
            l.setdefault("_files", {})[f] = (secret, posixpath.relpath(f, fmp))
    for role in ("health", "cloudprovider", "expander"):
        if role not in roles:
            cfg_problem("listen", f"no listener serves {role}")
    if len(problems) > before:
        return None
    ops_port = port_of(cfg["ops_listen"]) if "ops_listen" in cfg else None
    if ops_port is not None:
        bound[ops_port] = "ops_listen"
        if ops_port not in container_ports:
            dep_problem(f"{cpath}.ports", f"no containerPort {ops_port} for {cfg_src} ops_listen")

    def resolve(port):
        return port if isinstance(port, int) else by_name.get(port)

    # probes: the ops endpoint or a plaintext health listener of this config
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        p = ctr.get(probe)
        if p is None:
            if probe != "startupProbe":
                dep_problem(f"{cpath}.{probe}", "missing")
            continue
        if "grpc" in p:
            if p["grpc"]["port"] != port_of(roles["health"]["address"]):
                dep_problem(f"{cpath}.{probe}.grpc.port", f"{p['grpc']['port']} is not the plaintext health listener "
                            f"{port_of(roles['health']['address'])} of {cfg_src}")
        elif "httpGet" in p:
            num = resolve(p["httpGet"]["port"])
            if ops_port is None:
                dep_problem(f"{cpath}.{probe}.httpGet.port", f"{p['httpGet']['port']}: {cfg_src} has no ops_listen")
            elif num != ops_port:
                dep_problem(f"{cpath}.{probe}.httpGet.port", f"{p['httpGet']['port']} is not ops_listen's port {ops_port} ({cfg_src})")
            if p["httpGet"].get("path") not in ("/healthz", "/readyz"):
                dep_problem(f"{cpath}.{probe}.httpGet.path", f"{p['httpGet'].get('path')}: the ops endpoint serves /healthz and /readyz")
        else:
            dep_problem(f"{cpath}.{probe}", "neither gRPC health nor the ops endpoint's httpGet")
    ann = dep["spec"]["template"]["metadata"].get("annotations", {})
    if "prometheus.io/port" in ann and ops_port is not None and int(ann["prometheus.io/port"]) != ops_port:
        dep_problem("spec.template.metadata.annotations[prometheus.io/port]", f"{ann['prometheus.io/port']} is not ops_listen's port {ops_port}")

    # the Service: every target is a port frugal binds
    svc = one("Service", "frugal")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    for k, v in dep["spec"]["selector"]["matchLabels"].items():
        if labels.get(k) != v:
            dep_problem("spec.selector.matchLabels", f"{k}={v} is not a label of the pod template")
    for k in ("app.kubernetes.io/name", "app.kubernetes.io/instance"):
        if k not in labels:
            dep_problem("spec.template.metadata.labels", f"no {k}")
    if not all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()):
        problem("Service", "frugal", "spec.selector", "does not select the pods")
    svc_ports, svc_names = {}, {}
    for sp in svc["spec"]["ports"]:
        target = resolve(sp.get("targetPort", sp["port"]))
        svc_ports[sp["port"]] = target
        svc_names[sp.get("name")] = target
        if target not in bound:
            problem("Service", "frugal", f"spec.ports[{sp.get('name', sp['port'])}].targetPort",
                    f"{sp.get('targetPort')} is no port frugal binds ({cfg_src})")
    for role in ("cloudprovider", "expander"):
        if port_of(roles[role]["address"]) not in svc_ports.values():
            problem("Service", "frugal", "spec.ports", f"no port reaches the {role} listener {roles[role]['address']}")
    if ops_port is not None and ops_port not in svc_ports.values():
        problem("Service", "frugal", "spec.ports", f"no port reaches ops_listen {cfg['ops_listen']} (/metrics)")

    # NetworkPolicies: CA's pods to the gRPC ports; the monitoring namespace to ops only
    for np in (d for d in docs if d.get("kind") == "NetworkPolicy"):
        npn = np["metadata"]["name"]
        if not all(labels.get(k) == v for k, v in np["spec"]["podSelector"].get("matchLabels", {}).items()):
            problem("NetworkPolicy", npn, "spec.podSelector", "does not select frugal's pods")
        for j, rule in enumerate(np["spec"].get("ingress", [])):
            ports = {resolve(p["port"]) for p in rule.get("ports", [])}
            for p in ports - set(bound):
                problem("NetworkPolicy", npn, f"spec.ingress[{j}].ports", f"{p} is no port frugal binds")
            peers = rule.get("from", [])
            if any("namespaceSelector" in f and "podSelector" not in f for f in peers):
                if ops_port is not None and ports != {ops_port}:
                    problem("NetworkPolicy", npn, f"spec.ingress[{j}].ports", f"{sorted(ports)}: a namespace may reach the ops port {ops_port} only")
            elif any("podSelector" in f for f in peers):
                grpc = {port_of(roles["cloudprovider"]["address"]), port_of(roles["expander"]["address"])}
                if ports != grpc:
                    problem("NetworkPolicy", npn, f"spec.ingress[{j}].ports", f"{sorted(ports)}: CA's pods reach the gRPC ports {sorted(grpc)}, nothing else")
                for f in peers:
                    for k, v in f.get("podSelector", {}).get("matchLabels", {}).items():
                        if values.get("podLabels", {}).get(k) != v:
                            problem("NetworkPolicy", npn, f"spec.ingress[{j}].from", f"admits {k}={v}, a label CA's pods do not get ({VALUES[0]} podLabels)")
    for sm in (d for d in docs if d.get("kind") == "ServiceMonitor"):
        if not all(svc["metadata"].get("labels", {}).get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items()):
            problem("ServiceMonitor", sm["metadata"]["name"], "spec.selector", "does not select the Service frugal")
        for e in sm["spec"]["endpoints"]:
            if e.get("port") not in svc_names or svc_names[e.get("port")] != ops_port:
                problem("ServiceMonitor", sm["metadata"]["name"], "spec.endpoints[].port", f"{e.get('port')} is not the Service's port to ops_listen")

    # memory: the container's limit holds the budget frugal will use plus the margin
    limit = quantity_bytes(ctr.get("resources", {}).get("limits", {}).get("memory", ""))
    if limit is None:
        dep_problem(f"{cpath}.resources.limits.memory", "not set: frugal's memory budget would not be bounded by the container")
    else:
        configured = quantity_bytes((cfg.get("limits") or {}).get("memory", "")) if (cfg.get("limits") or {}).get("memory") else None
        budget = configured if configured is not None else int(limit // 4 * 3)
        source = f"{cfg_src} limits.memory" if configured is not None else "75 % of it (limits.memory unset)"
        if budget + MEMORY_MARGIN > limit:
            dep_problem(f"{cpath}.resources.limits.memory",
                        f"{limit} bytes cannot hold frugal's memory budget {budget} ({source}) plus the {MEMORY_MARGIN >> 20} MiB margin")
        max_msg = cfg.get("max_message_bytes", 536870912)
        if budget < max_msg:
            dep_problem(f"{cpath}.resources.limits.memory",
                        f"frugal's budget {budget} ({source}) cannot hold one message of max_message_bytes ({max_msg})")

    # certificates: renewed well before the end; CA's outlives its restart cadence
    for c in (d for d in docs if d.get("kind") == "Certificate"):
        spec, cn = c["spec"], c["metadata"]["name"]
        duration = hours(spec.get("duration", "2160h"))  # cert-manager's defaults: 90 days,
        renew = hours(spec.get("renewBefore", "0h")) if "renewBefore" in spec else (duration or 0) / 3  # a third
        if duration is None or renew is None:
            problem("Certificate", cn, "spec.duration, spec.renewBefore", "not a duration")
            continue
        if renew >= duration:
            problem("Certificate", cn, "spec.renewBefore", f"{spec.get('renewBefore')} is not below spec.duration {spec.get('duration')}")
        if spec["secretName"] == CA_CLIENT_SECRET:
            if renew <= CA_RESTART_CADENCE_HOURS:
                problem("Certificate", cn, "spec.renewBefore",
                        f"{spec.get('renewBefore')}: CA reads its client certificate at start; the one it holds must stay "
                        f"valid past CA's restart cadence ({CA_RESTART_CADENCE_HOURS} h, docs/deploy.md) after a renewal")
            if duration - renew < CA_RESTART_CADENCE_HOURS:
                problem("Certificate", cn, "spec.duration", "renewed more often than CA's restart cadence")

    # cert-manager chain
    server_secret = roles["cloudprovider"]["_files"][roles["cloudprovider"]["tls"]["cert"]][0]
    server = certs[server_secret]["spec"]
    svc_dns = f"{svc['metadata']['name']}.{ns}.svc"
    if svc_dns not in server["dnsNames"]:
        problem("Certificate", certs[server_secret]["metadata"]["name"], "spec.dnsNames", f"lacks {svc_dns}")
    if "server auth" not in server["usages"]:
        problem("Certificate", certs[server_secret]["metadata"]["name"], "spec.usages", "no server auth")
    ca_issuer = issuers[server["issuerRef"]["name"]]
    ca_cert = certs[ca_issuer["spec"]["ca"]["secretName"]]["spec"]
    check(ca_cert.get("isCA") is True, f"{name}: the CA Issuer's certificate is not a CA")
    check("selfSigned" in issuers[ca_cert["issuerRef"]["name"]]["spec"], f"{name}: the CA is not issued by a self-signed Issuer")

    # CA's side: values and cloud-config
    vsrc = VALUES[0]
    check(values["cloudProvider"] == "externalgrpc", f"{vsrc}: cloudProvider: not externalgrpc")
    extra = values["extraArgs"]
    check(extra["expander"] == "grpc,least-waste", f"{vsrc}: extraArgs.expander: must fall back to least-waste")
    secret_mounts = {v["mountPath"]: v.get("name", k) for k, v in values["extraVolumeSecrets"].items()}

    def ca_file(path, field):
        for mp_, secret in secret_mounts.items():
            if under(path, mp_):
                return secret, posixpath.relpath(path, mp_)
        problems.append(f"{vsrc}: {field}: {path} is on no extraVolumeSecrets mount")
        return None, None

    host, port = extra["grpc-expander-url"].rsplit(":", 1)
    check(host in server["dnsNames"], f"{vsrc}: extraArgs.grpc-expander-url: {host} is not in the server certificate")
    check(int(port) in svc_ports and svc_ports[int(port)] == port_of(roles["expander"]["address"]),
          f"{vsrc}: extraArgs.grpc-expander-url: grpc-expander-url is not the expander listener (port {port} of the Service of {name})")
    exp_secret, exp_key = ca_file(extra["grpc-expander-cert"], "extraArgs.grpc-expander-cert")
    check(exp_key == "ca.crt", f"{vsrc}: extraArgs.grpc-expander-cert: must be the CA certificate")
    cc_secret_name, cc_key = ca_file(extra["cloud-config"], "extraArgs.cloud-config")
    cc_doc = one("Secret", cc_secret_name)
    if cc_doc is None:
        return None
    cc = yaml.safe_load(cc_doc["stringData"][cc_key])
    host, port = cc["address"].rsplit(":", 1)
    check(host in server["dnsNames"], f"{name}: Secret {cc_secret_name}: address: {host} is not in the server certificate")
    check(int(port) in svc_ports and svc_ports[int(port)] == port_of(roles["cloudprovider"]["address"]),
          f"{name}: Secret {cc_secret_name}: address: port {port} is not the Service's port to the cloudprovider listener")
    client_files = {k: ca_file(cc[k], f"cloud-config {k}") for k in ("cert", "key", "cacert")}
    for k, (secret, _) in client_files.items():
        if check(secret in certs, f"{name}: cloud-config {k}: Secret {secret} issued by no Certificate"):
            check("client auth" in certs[secret]["spec"]["usages"], f"{name}: {secret} lacks client auth")
            check(certs[secret]["spec"]["issuerRef"]["name"] == server["issuerRef"]["name"],
                  f"{name}: client and server certificates from different issuers")
    return {"cfg": cfg, "roles": roles, "svc_dns": svc_dns, "exp": (exp_secret, exp_key), "client": client_files}


def replay(r, pki, state_dir, out_config):
    """The top overlay's config on loopback, and the shell assignments for the test."""
    cfg, roles = r["cfg"], r["roles"]
    held = []  # each port stays bound until all are chosen, so they differ

    # FRUGAL_TEST_PORTS=LO-HI confines the ports to that range (a shared machine);
    # otherwise the kernel picks them.
    span = os.environ.get("FRUGAL_TEST_PORTS")
    lo, _, hi = (span or "0-0").partition("-")
    candidates = iter(range(int(lo), int(hi or lo) + 1))

    def free_port():
        for port in candidates if span else [0]:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            held.append(s)
            return s.getsockname()[1]
        sys.exit(f"no free port in FRUGAL_TEST_PORTS={span}")

    local = dict(cfg)
    local["listen"] = []
    ports = {}
    for l in cfg["listen"]:
        p = free_port()
        ports[port_of(l["address"])] = p
        ll = {k: v for k, v in l.items() if k != "_files"}
        ll["address"] = f"127.0.0.1:{p}"
        if "tls" in l:
            ll["tls"] = {k: os.path.join(pki, *l["_files"][f]) for k, f in l["tls"].items()}
        local["listen"].append(ll)
    if "state_file" in cfg:
        local["state_file"] = os.path.join(state_dir, posixpath.basename(cfg["state_file"]))
    # a stand-in for the hook: it makes no machine, it prints an id
    os.makedirs(state_dir, exist_ok=True)
    hook = os.path.join(state_dir, "hook")
    with open(hook, "w") as f:
        f.write('#!/bin/sh\n[ "$1" = create ] && echo "replay:///$3"\nexit 0\n')
    os.chmod(hook, 0o755)
    local["provider"] = {"kind": "exec", "command": hook}
    if "ops_listen" in cfg:
        local["ops_listen"] = f"127.0.0.1:{free_port()}"
        print(f"OPS_PORT={port_of(local['ops_listen'])}")
    for s in held:
        s.close()
    with open(out_config, "w") as f:
        yaml.safe_dump(local, f)
    print(f"HEALTH_PORT={ports[port_of(roles['health']['address'])]}")
    print(f"CP_PORT={ports[port_of(roles['cloudprovider']['address'])]}")
    print(f"EXP_PORT={ports[port_of(roles['expander']['address'])]}")
    print(f"SERVER_NAME={r['svc_dns']}")
    print(f"EXPANDER_CA={os.path.join(pki, *r['exp'])}")
    for k, (secret, key) in r["client"].items():
        print(f"CLIENT_{k.upper()}={os.path.join(pki, secret, key)}")


def main():
    root, pki, state_dir, out_config = (os.path.abspath(a) for a in sys.argv[1:5])
    values = check_values(root)
    image = check_image(root)
    overlays = discover(root)
    check(root in overlays, "deploy/: renders no Deployment frugal")
    tmp = tempfile.mkdtemp(prefix="deploy-check.")
    results = {}
    try:
        for overlay in overlays:
            docs = compose(root, overlay, render(overlay) or [], tmp)
            if docs:
                results[overlay] = check_overlay(root, overlay, docs, values, image)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("# overlays checked: " + " ".join(sorted(os.path.relpath(o, root) for o in overlays)))
    if problems or results.get(root) is None:
        bail()
    replay(results[root], pki, state_dir, out_config)


main()
