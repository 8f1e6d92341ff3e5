#!/usr/bin/env bash
# Installs what Helix's tests need from Debian, before scripts/setup-tools.sh and the test run.
# Idempotent: `apt-get update` and `apt-get install` run only when a listed package is not
# installed yet, and pgvector is built only when it is missing, so the usual run is a few dpkg
# queries and file checks.
#
# PostgreSQL 15 (Debian's postgresql-15: server binaries under /usr/lib/postgresql/15/bin, and
# the client for psql and pg_config) is what the postgres:// and pgvector tests run against.
# pgvector is not packaged for Debian 12: scripts/setup-pgvector.sh builds it from the next
# release's source package against the installed server (so it runs after the packages above).
# Nothing is started here: `make test` starts a throw-away cluster with scripts/postgres.sh and
# stops it at exit. Node 22, the MCP peers and ONNX Runtime come from npm via setup-tools.sh.
#
# HAProxy (the load balancer in front of the stateless-replica test) and Redis (the shared
# rate-limit store's tests) are started by the tests that need them, on free loopback ports,
# and stopped by them. Their packages must not start system-wide daemons: while installing,
# a policy-rc.d that refuses every service start is put in place unless one is there already.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# curl is the browser of the OAuth tests: `helix mcp login` opens the authorization URL
# with $BROWSER, and curl follows the test authorization server's redirect to the loopback
# listener (scripts/conformance-client.sh, internal/cli's login tests).
# chromium is the browser of the web console's tests (internal/console/browsertest drives it
# headless through chromedp): every page is loaded in it, at desktop and phone widths, and must
# report no error. make test sets HELIX_REQUIRE_BROWSER=1, so a missing chromium fails the run.
APT_PACKAGES=(postgresql-15 postgresql-client-15 haproxy redis-server curl chromium)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "setup-services: nothing to install (${#APT_PACKAGES[@]} apt packages listed, all present)"
else
	[ "$(id -u)" = 0 ] || { echo "setup-services: need root to apt-get install ${missing[*]}" >&2; exit 1; }
	echo "setup-services: installing ${missing[*]}"
	apt-get update -qq
	own_policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		own_policy=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
	[ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
	# The lists are fresh: setup-pgvector.sh need not update them again for its build deps.
	export HELIX_APT_UPDATED=1
fi

./setup-pgvector.sh
