#!/usr/bin/env bash
# The documentation that must follow the scripts: the README's package lists are exactly
# what scripts/install-deps.sh installs (the default list, --libvirt's and --ci's).
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

log "README's package lists = scripts/install-deps.sh's"
run check_packages "$FRUGAL_SOURCE_DIR/README.md" "$FRUGAL_SOURCE_DIR/scripts/install-deps.sh"
assert_eq 0 "$RC" "README package lists [$OUT $ERR]"

log "a package the README does not list is caught"
sed 's/^PACKAGES=(build-essential /PACKAGES=(build-essential libfoo-dev /' \
    "$FRUGAL_SOURCE_DIR/scripts/install-deps.sh" >"$TMP/install-deps.sh"
run check_packages "$FRUGAL_SOURCE_DIR/README.md" "$TMP/install-deps.sh"
assert_eq 1 "$RC" "an extra package fails"
assert_match "^README.md build and test list: missing \['libfoo-dev'\], extra \[\]$" "$OUT" "it is named"

finish
