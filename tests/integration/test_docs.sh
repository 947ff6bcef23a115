#!/usr/bin/env bash
# The documentation that must follow the scripts: the README's package lists are exactly
# what scripts/install-deps.sh installs (the default list, --libvirt's and --ci's),
# docs/deploy.md's commands work as written against deploy/, and every relative link of
# the Markdown files reaches a file and, after a #, a heading of it.
source "$(dirname "$0")/lib.sh"

# check_packages README SCRIPT: each list of the script against the README's bullet
check_packages() {
    python3 -c '
import re, sys
readme, script = (open(p, encoding="utf-8").read() for p in sys.argv[1:3])

def script_list(pattern):
    m = re.search(pattern, script, re.M)
    if not m:
        sys.exit(f"scripts/install-deps.sh: no {pattern}")
    return m.group(1).split()

def readme_bullet(start):
    m = re.search(r"^\* " + re.escape(start) + r"(.*?)(?=^\* |^$)", readme, re.M | re.S)
    if not m:
        sys.exit(f"README.md: no package bullet \"* {start}\"")
    return m.group(1)

def ticked(text):
    return [t for t in re.findall(r"`([^`]+)`", text) if not t.startswith("--") and "/" not in t]

base = script_list(r"^PACKAGES=\(([^)]*)\)")
libvirt = script_list(r"^LIBVIRT=\(([^)]*)\)")
ci = script_list(r"^\s*PACKAGES\+=\(([^)]*)\)")
ci_has_libvirt = "\"${LIBVIRT[@]}\"" in ci
ci = [p for p in ci if p != "\"${LIBVIRT[@]}\""]
bad = []
for what, text, want in (("build and test", readme_bullet("build and test:"), base),
                         ("--libvirt", readme_bullet("with `--libvirt`"), libvirt),
                         ("--ci", readme_bullet("with `--ci`"), ci)):
    have = ticked(text)
    if sorted(have) != sorted(want):
        bad.append("README.md %s list: missing %s, extra %s" % (
            what, sorted(set(want) - set(have)), sorted(set(have) - set(want))))
if ci_has_libvirt != ("`--libvirt` packages" in readme_bullet("with `--ci`")):
    bad.append("README.md --ci list: the --libvirt packages are %s by the script" % (
        "added" if ci_has_libvirt else "not added"))
print("\n".join(bad))
sys.exit(1 if bad else 0)
' "$1" "$2"
}

# check_deploy_commands DOC DOCKERFILE VALUES: the commands of docs/deploy.md (code blocks
# and inline code) work as written against deploy/: every namespaced kubectl command
# names its namespace, kubectl exec runs a program the image has, the Deployments named
# are the ones deploy/ and CA's chart values make, each helm chart's repository is added
# first, no standalone kustomize is assumed, and docker build passes the revision the
# Dockerfile takes. One "DOC:LINE: problem" line each.
check_deploy_commands() {
    python3 -c '
import re, shlex, sys, yaml
doc_path, dockerfile_path, values_path = sys.argv[1:4]
doc = open(doc_path, encoding="utf-8").read()
dockerfile = open(dockerfile_path, encoding="utf-8").read()
values = yaml.safe_load(open(values_path))
name = "docs/deploy.md"
# without fullnameOverride the chart names the Deployment of CA
# RELEASE-CLOUDPROVIDER-cluster-autoscaler (its _helpers.tpl); that of frugal is frugal
ca = values.get("fullnameOverride") or "cluster-autoscaler-%s-cluster-autoscaler" % values.get("cloudProvider")
deployments = {"frugal", ca}
problems = []

commands = []  # (line, command, in a code block)
fence = None
lines = doc.split("\n")
i = 0
while i < len(lines):
    line = lines[i]
    if line.startswith("```"):
        fence = None if fence is not None else line[3:].strip()
        i += 1
        continue
    if fence == "":
        start, cmd = i + 1, line
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        cmd = " ".join(re.sub(r"\s+#.*$", "", cmd).split())
        if cmd:
            commands.append((start, cmd, True))
    i += 1
for m in re.finditer(r"`([^`]+)`", re.sub(r"```.*?```", lambda b: "\n" * b.group(0).count("\n"), doc, flags=re.S)):
    text = " ".join(m.group(1).split())
    # a command, not a mention of one ("`kubectl exec` runs no shell")
    if (re.match(r"(kubectl|helm|docker|kustomize) ", text) and len(text.split()) > 2) or \
            ("kubectl " in text and text.startswith("for ")):
        commands.append((doc.count("\n", 0, m.start()) + 1, text, False))

added_repos = set()
for line, cmd, block in sorted(commands):
    where = "%s:%d" % (name, line)
    for k in re.findall(r"kubectl\b[^;|)&]*", cmd):
        try:
            words = shlex.split(k)
        except ValueError:
            words = k.split()
        args, ns, j = [], False, 1
        while j < len(words):
            w = words[j]
            if w in ("-n", "--namespace"):
                ns, j = True, j + 2
                continue
            if w.startswith("--namespace=") or w in ("-A", "--all-namespaces"):
                ns = True
            args.append(w)
            j += 1
        verb = args[0] if args else ""
        cluster_scoped = verb in ("kustomize", "version", "config") or "-k" in args or \
            (verb == "get" and len(args) > 1 and args[1] in ("nodes", "node", "no"))
        if not ns and not cluster_scoped:
            problems.append("%s: %s: no -n kube-system (kubectl uses the context\x27s namespace, default)" % (where, k.strip()))
        if verb == "exec" and "--" in words:
            prog = words[words.index("--") + 1] if words.index("--") + 1 < len(words) else ""
            if prog == "kill":
                problems.append("%s: %s: the image has no kill program and exec runs no shell: sh -c %s" % (
                    where, k.strip(), shlex.quote("kill ...")))
        refs = []
        for a, b in zip([""] + args, args):
            if a in ("-k", "-f", "--kustomize", "--filename"):
                continue  # a path, not a resource
            if a in ("deploy", "deployment", "deployments"):
                refs.append(b)
            r = re.fullmatch(r"(?:deploy|deployment|deployments)(?:\.apps)?/([a-z0-9-]+)", b)
            if r:
                refs.append(r.group(1))
        for ref in refs:
            if ref not in deployments:
                problems.append("%s: %s: no Deployment %s: deploy/ makes frugal, CA\x27s chart values %s" % (
                    where, k.strip(), ref, ca))
    for repo in re.findall(r"helm repo add (\S+)", cmd):
        added_repos.add(repo)
    h = re.search(r"helm (?:install|upgrade --install|upgrade) (?:-\S+ \S+ )*\S+ (\S+)/\S+", cmd)
    if h and h.group(1) not in added_repos:
        problems.append("%s: %s: the chart repository %s is not added before (helm repo add %s URL)" % (
            where, cmd, h.group(1), h.group(1)))
    if block and re.match(r"(?:cd \S+ && )?kustomize ", cmd):
        problems.append("%s: %s: needs standalone kustomize; kubectl has it built in (edit images: in the kustomization)" % (where, cmd))
    if re.match(r"docker build ", cmd) and "--build-arg FRUGAL_REVISION=" not in cmd:
        problems.append("%s: %s: no --build-arg FRUGAL_REVISION=...: the context has no .git, frugal version says unknown" % (where, cmd))
if not re.search(r"^ARG FRUGAL_REVISION\b", dockerfile, re.M) or not re.search(r"-DFRUGAL_REVISION=\"?\$\{?FRUGAL_REVISION", dockerfile):
    problems.append("deploy/Dockerfile: no ARG FRUGAL_REVISION passed to cmake as -DFRUGAL_REVISION (docs/deploy.md, step 1)")
print("\n".join(problems))
sys.exit(1 if problems else 0)
' "$1" "$2" "$3"
}

# check_links ROOT FILE...: every relative link of the Markdown FILEs (paths under ROOT)
# names a file or directory that exists and, after a #, a heading of that file as GitHub
# makes its anchor. One "FILE:LINE: problem" line each.
check_links() {
    python3 -c '
import functools, os, re, sys
root, files = sys.argv[1], sys.argv[2:]

def outside_code_blocks(text):
    """(line number, line) of each line outside code blocks."""
    fence = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            yield number, line

@functools.lru_cache(maxsize=None)  # a file is read once, however many links name it
def heading_anchors(path):
    seen, result = {}, set()
    for _, line in outside_code_blocks(open(path, encoding="utf-8").read()):
        m = re.match(r"#+ (.*)", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else "%s-%d" % (slug, n))
    return result

problems = []
for name in files:
    path = os.path.join(root, name)
    for number, line in outside_code_blocks(open(path, encoding="utf-8").read()):
        # a link inside inline code is an example, not a link
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                problems.append("%s:%d: %s: no such file" % (name, number, target))
            elif anchor and dest.endswith(".md") and anchor not in heading_anchors(dest):
                problems.append("%s:%d: %s: no such heading" % (name, number, target))
print("\n".join(problems))
sys.exit(1 if problems else 0)
' "$@"
}

log "docs/deploy.md's commands work as written against deploy/"
run check_deploy_commands "$FRUGAL_SOURCE_DIR/docs/deploy.md" "$FRUGAL_SOURCE_DIR/deploy/Dockerfile" \
    "$FRUGAL_SOURCE_DIR/deploy/cluster-autoscaler/values.yaml"
assert_eq 0 "$RC" "docs/deploy.md commands [$OUT $ERR]"

log "a command that fails as written is caught"
sed -e '0,/kubectl -n kube-system get pods -l/s//kubectl get pods -l/' \
    -e "s/-- sh -c 'kill -HUP 1'/-- kill -HUP 1/" \
    -e '/^helm repo add jetstack /d' \
    -e 's/--build-arg FRUGAL_REVISION=$(git rev-parse --short HEAD) //' \
    "$FRUGAL_SOURCE_DIR/docs/deploy.md" >"$TMP/deploy.md"
printf '%s\n' '```' 'cd deploy && kustomize edit set image frugal=registry.example/frugal:0.1.0' '```' >>"$TMP/deploy.md"
grep -v 'FRUGAL_REVISION' "$FRUGAL_SOURCE_DIR/deploy/Dockerfile" >"$TMP/Dockerfile"
grep -v '^fullnameOverride:' "$FRUGAL_SOURCE_DIR/deploy/cluster-autoscaler/values.yaml" >"$TMP/values.yaml"
run check_deploy_commands "$TMP/deploy.md" "$TMP/Dockerfile" "$TMP/values.yaml"
assert_eq 1 "$RC" "the broken commands fail"
assert_match '^docs/deploy.md:[0-9]+: kubectl get pods -l app.kubernetes.io/name=frugal: no -n kube-system' "$OUT" "a namespaced command without its namespace"
assert_match "^docs/deploy.md:[0-9]+: kubectl -n kube-system exec deploy/frugal -- kill -HUP 1: the image has no kill program" "$OUT" "exec of a program the image lacks"
assert_match '^docs/deploy.md:[0-9]+: helm install cert-manager jetstack/cert-manager .*: the chart repository jetstack is not added before' "$OUT" "a chart whose repository is not added"
assert_match '^docs/deploy.md:[0-9]+: kubectl -n kube-system get deploy cluster-autoscaler: no Deployment cluster-autoscaler: deploy/ makes frugal, CA.s chart values cluster-autoscaler-externalgrpc-cluster-autoscaler' "$OUT" "CA's Deployment as the chart names it without fullnameOverride"
assert_match '^docs/deploy.md:[0-9]+: docker build -f deploy/Dockerfile -t registry.example/frugal:0.1.0 .: no --build-arg FRUGAL_REVISION' "$OUT" "docker build without the revision"
assert_match '^docs/deploy.md:[0-9]+: cd deploy && kustomize edit set image .*: needs standalone kustomize' "$OUT" "standalone kustomize"
assert_match '^deploy/Dockerfile: no ARG FRUGAL_REVISION' "$OUT" "a Dockerfile that does not take the revision"

log "README's package lists = scripts/install-deps.sh's"
run check_packages "$FRUGAL_SOURCE_DIR/README.md" "$FRUGAL_SOURCE_DIR/scripts/install-deps.sh"
assert_eq 0 "$RC" "README package lists [$OUT $ERR]"

log "a package the README does not list is caught"
sed 's/^PACKAGES=(build-essential /PACKAGES=(build-essential libfoo-dev /' \
    "$FRUGAL_SOURCE_DIR/scripts/install-deps.sh" >"$TMP/install-deps.sh"
run check_packages "$FRUGAL_SOURCE_DIR/README.md" "$TMP/install-deps.sh"
assert_eq 1 "$RC" "an extra package fails"
assert_match "^README.md build and test list: missing \['libfoo-dev'\], extra \[\]$" "$OUT" "it is named"

log "every relative link of README.md and docs/ reaches its file and heading"
cd "$FRUGAL_SOURCE_DIR" && md_files=(README.md docs/*.md) && cd - >/dev/null
run check_links "$FRUGAL_SOURCE_DIR" "${md_files[@]}"
assert_eq 0 "$RC" "links [$OUT $ERR]"

log "a link to a missing heading or file is caught"
mkdir -p "$TMP/links/docs"
printf '# Top `x` here\n\n## Two\n\nsee [a](#top-x-here), [b](#two), [c](docs/b.md#gone), [d](nothere.md)\n' \
    >"$TMP/links/README.md"
printf '# B\n\n```\n# not a heading\n```\n[back](../README.md#two) [e](#not-a-heading)\n' >"$TMP/links/docs/b.md"
run check_links "$TMP/links" README.md docs/b.md
assert_eq 1 "$RC" "broken links fail"
assert_eq "README.md:5: docs/b.md#gone: no such heading
README.md:5: nothere.md: no such file
docs/b.md:6: #not-a-heading: no such heading" "$OUT" "each is named with its file and line"

finish
