#!/usr/bin/env python3
"""Check that the manifests of deploy/ agree with each other and with the config frugal
loads, and write that config for a local replay with the same listener layout.

usage: deploy_check.py RENDERED VALUES PKI STATE_DIR OUT_CONFIG

RENDERED is `kubectl kustomize deploy/`, VALUES the cluster-autoscaler Helm values. The
replay config has each listener on a free loopback port (same order, services and TLS
layout), each Secret mount path pointed at PKI/<secret name> (scripts/dev-certs.sh) and
the state under STATE_DIR. Prints shell assignments for the test (ports, client files)
on stdout, one line per problem on stderr; exit 1 when anything disagrees."""
import os
import posixpath
import socket
import sys

import yaml

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


def one(docs, kind, name=None):
    found = [d for d in docs if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)]
    if not found:
        sys.exit(f"FAIL: no {kind} {name or ''} in the rendered manifests")
    return found[0]


def under(path, mount):
    return posixpath.commonpath([path, mount]) == mount


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def main():
    rendered, values_path, pki, state_dir, out_config = sys.argv[1:6]
    docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
    values = yaml.safe_load(open(values_path))

    dep = one(docs, "Deployment", "frugal")
    pod = dep["spec"]["template"]["spec"]
    (ctr,) = pod["containers"]
    mounts = {m["mountPath"]: m for m in ctr["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    ns = dep["metadata"]["namespace"]

    def volume_at(path):
        for mp, m in mounts.items():
            if under(path, mp):
                return mp, volumes[m["volumeName"] if "volumeName" in m else m["name"]]
        return None, None

    # hardening
    check(pod.get("priorityClassName") == "system-cluster-critical", "priorityClassName")
    check(pod.get("automountServiceAccountToken") is False, "service-account token mounted")
    check(pod["securityContext"].get("runAsNonRoot") is True, "runAsNonRoot")
    check(pod["securityContext"].get("seccompProfile", {}).get("type") == "RuntimeDefault", "seccomp")
    sc = ctr["securityContext"]
    check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation")
    check(sc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities not all dropped")
    check(pod.get("terminationGracePeriodSeconds", 30) > 10 + 5,
          "terminationGracePeriodSeconds must exceed the 10 s drain and the final write")
    check(dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "Recreate",
          "one replica, Recreate")
    check(all("subPath" not in m for m in ctr["volumeMounts"]), "a subPath mount never sees updates")

    # the config: args -> ConfigMap volume
    args = ctr["args"]
    check(args[:2] == ["serve", "-c"], f"args {args}")
    cfg_path = args[2]
    mp, vol = volume_at(cfg_path)
    check(vol is not None and "configMap" in vol, f"{cfg_path} is not on a ConfigMap volume")
    cm = one(docs, "ConfigMap", vol["configMap"]["name"])
    key = posixpath.relpath(cfg_path, mp)
    if not check(key in cm["data"], f"ConfigMap {cm['metadata']['name']} has no key {key}"):
        bail()
    cfg = yaml.safe_load(cm["data"][key])

    # listeners: roles, ports, TLS files on Secret volumes issued by cert-manager
    certs = {c["spec"]["secretName"]: c for c in docs if c.get("kind") == "Certificate"}
    issuers = {i["metadata"]["name"]: i for i in docs if i.get("kind") in ("Issuer", "ClusterIssuer")}
    container_ports = {p["containerPort"]: p.get("name") for p in ctr["ports"]}
    roles = {}
    for l in cfg["listen"]:
        services = set(l.get("services", ["cloudprovider", "expander", "autoprovisioning", "health"]))
        port = port_of(l["address"])
        check(port in container_ports, f"listener port {port} is not a container port")
        tls = l.get("tls")
        if services <= {"health"}:
            check(tls is None, "the probe listener must be plaintext (probes send no certificate)")
            roles["health"] = l
        if "cloudprovider" in services:
            check(tls is not None and "client_ca" in tls, "the cloudprovider listener must require client certificates")
            roles["cloudprovider"] = l
        if "expander" in services:
            check(tls is not None and "client_ca" not in tls,
                  "the expander listener must be TLS without client_ca (CA sends no certificate)")
            roles["expander"] = l
        for f in (tls or {}).values():
            fmp, fvol = volume_at(f)
            if check(fvol is not None and "secret" in fvol, f"{f} is not on a Secret volume"):
                secret = fvol["secret"]["secretName"]
                check(secret in certs, f"Secret {secret} is issued by no Certificate")
                check(posixpath.basename(f) in ("tls.crt", "tls.key", "ca.crt"), f"{f}: not a cert-manager key")
                l.setdefault("_files", {})[f] = (secret, posixpath.relpath(f, fmp))
    for role in ("health", "cloudprovider", "expander"):
        check(role in roles, f"no listener serves {role}")

    # probes
    for probe in ("readinessProbe", "livenessProbe"):
        p = ctr[probe]
        if "grpc" in p:
            check(p["grpc"]["port"] == port_of(roles["health"]["address"]), f"{probe} is not on the health listener")
        else:
            check("httpGet" in p and "ops_listen" in cfg, f"{probe}: neither gRPC health nor the ops endpoint")
            if "ops_listen" in cfg:
                port = p["httpGet"]["port"]
                num = port if isinstance(port, int) else next(k for k, v in container_ports.items() if v == port)
                check(num == port_of(cfg["ops_listen"]), f"{probe} is not on ops_listen")

    # the state file on the PVC
    smp, svol = volume_at(cfg["state_file"])
    check(svol is not None and "persistentVolumeClaim" in svol, "state_file is not on the PVC")
    if svol is not None and "persistentVolumeClaim" in svol:
        one(docs, "PersistentVolumeClaim", svol["persistentVolumeClaim"]["claimName"])

    # the Service and the NetworkPolicy
    svc = one(docs, "Service", "frugal")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), "Service selector")
    by_name = {v: k for k, v in container_ports.items()}
    svc_ports = {}
    for sp in svc["spec"]["ports"]:
        target = sp.get("targetPort", sp["port"])
        svc_ports[sp["port"]] = by_name.get(target, target)
    for role in ("cloudprovider", "expander"):
        check(port_of(roles[role]["address"]) in svc_ports.values(), f"the Service does not expose {role}")
    np = one(docs, "NetworkPolicy")
    check(all(labels.get(k) == v for k, v in np["spec"]["podSelector"]["matchLabels"].items()), "NetworkPolicy podSelector")
    (rule,) = np["spec"]["ingress"]
    allowed = rule["from"][0]["podSelector"]["matchLabels"]
    check(all(values.get("podLabels", {}).get(k) == v for k, v in allowed.items()),
          "the NetworkPolicy admits labels CA's pods do not get (values podLabels)")
    check(sorted(p["port"] for p in rule["ports"]) == sorted(set(svc_ports.values())),
          "NetworkPolicy ports differ from the Service's")

    # cert-manager chain
    server_secret = roles["cloudprovider"]["_files"][roles["cloudprovider"]["tls"]["cert"]][0]
    server = certs[server_secret]["spec"]
    svc_dns = f"{svc['metadata']['name']}.{ns}.svc"
    check(svc_dns in server["dnsNames"], f"server certificate lacks {svc_dns}")
    check("server auth" in server["usages"], "server certificate without server auth")
    ca_issuer = issuers[server["issuerRef"]["name"]]
    ca_cert = certs[ca_issuer["spec"]["ca"]["secretName"]]["spec"]
    check(ca_cert.get("isCA") is True, "the CA Issuer's certificate is not a CA")
    check("selfSigned" in issuers[ca_cert["issuerRef"]["name"]]["spec"], "the CA is not issued by a self-signed Issuer")

    # CA's side: values and cloud-config
    check(values["cloudProvider"] == "externalgrpc", "cloudProvider")
    extra = values["extraArgs"]
    check(extra["expander"] == "grpc,least-waste", "expander must fall back to least-waste")
    secret_mounts = {v["mountPath"]: v.get("name", k) for k, v in values["extraVolumeSecrets"].items()}

    def ca_file(path):
        for mp_, name in secret_mounts.items():
            if under(path, mp_):
                return name, posixpath.relpath(path, mp_)
        problems.append(f"{path} is on no extraVolumeSecrets mount")
        return None, None

    host, port = extra["grpc-expander-url"].rsplit(":", 1)
    check(host in server["dnsNames"], f"{host} is not in the server certificate")
    check(int(port) in svc_ports and svc_ports[int(port)] == port_of(roles["expander"]["address"]),
          "grpc-expander-url is not the expander listener")
    exp_secret, exp_key = ca_file(extra["grpc-expander-cert"])
    check(exp_key == "ca.crt", "grpc-expander-cert must be the CA certificate")
    cc_secret_name, cc_key = ca_file(extra["cloud-config"])
    cc = yaml.safe_load(one(docs, "Secret", cc_secret_name)["stringData"][cc_key])
    host, port = cc["address"].rsplit(":", 1)
    check(host in server["dnsNames"], f"cloud-config {host} is not in the server certificate")
    check(int(port) in svc_ports and svc_ports[int(port)] == port_of(roles["cloudprovider"]["address"]),
          "the cloud-config address is not the cloudprovider listener")
    client_files = {k: ca_file(cc[k]) for k in ("cert", "key", "cacert")}
    for k, (secret, _) in client_files.items():
        if check(secret in certs, f"cloud-config {k}: Secret {secret} issued by no Certificate"):
            check("client auth" in certs[secret]["spec"]["usages"], f"{secret} lacks client auth")
            check(certs[secret]["spec"]["issuerRef"]["name"] == server["issuerRef"]["name"],
                  "client and server certificates from different issuers")

    if problems:
        bail()

    # the replay config; each port stays bound until all are chosen, so they differ
    held = []

    def free_port():
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        held.append(s)
        return s.getsockname()[1]

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
    local["state_file"] = os.path.join(state_dir, posixpath.basename(cfg["state_file"]))
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
    print(f"SERVER_NAME={svc_dns}")
    print(f"EXPANDER_CA={os.path.join(pki, exp_secret, exp_key)}")
    for k, (secret, key) in client_files.items():
        print(f"CLIENT_{k.upper()}={os.path.join(pki, secret, key)}")


main()
