#!/usr/bin/env bash
# The documentation that must follow the scripts: the README's package list is exactly
# what scripts/install-deps.sh installs (both lists: the default one and --ci's).
source "$(dirname "$0")/lib.sh"

log "README's package list = scripts/install-deps.sh's"
run python3 - "$FRUGAL_SOURCE_DIR/README.md" "$FRUGAL_SOURCE_DIR/scripts/install-deps.sh" <<'PYEOF'
import re, sys
readme, script = (open(p, encoding="utf-8").read() for p in sys.argv[1:3])
# PACKAGES=(...) and, under --ci, PACKAGES+=(...)
base = re.search(r"^PACKAGES=\(([^)]*)\)", script, re.M)
ci = re.search(r"^\s*PACKAGES\+=\(([^)]*)\)", script, re.M)
if not base or not ci:
    sys.exit("scripts/install-deps.sh: no PACKAGES=(...) or PACKAGES+=(...)")
want_base, want_ci = base.group(1).split(), ci.group(1).split()
# the README's two bullets: "* build and test: `pkg` ..." and "* with `--ci`, also: ..."
m_base = re.search(r"^\* build and test:(.*?)(?=^\* with)", readme, re.M | re.S)
m_ci = re.search(r"^\* with `--ci`, also:(.*?)(?:\n\n|\Z)", readme, re.M | re.S)
if not m_base or not m_ci:
    sys.exit("README.md: the package list bullets are missing")
def pkgs(text):
    return [t for t in re.findall(r"`([^`]+)`", text) if t != "--ci"]
bad = False
for what, have, want in (("default", pkgs(m_base.group(1)), want_base),
                         ("--ci", pkgs(m_ci.group(1)), want_ci)):
    if sorted(have) != sorted(want):
        bad = True
        print("README.md %s list: missing %s, extra %s" % (
            what, sorted(set(want) - set(have)), sorted(set(have) - set(want))))
sys.exit(1 if bad else 0)
PYEOF
assert_eq 0 "$RC" "README package list [$OUT $ERR]"

finish
