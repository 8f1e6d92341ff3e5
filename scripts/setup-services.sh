#!/usr/bin/env bash
# Installs the Debian packages that Helix's tests need, before scripts/setup-tools.sh and the
# test run. Idempotent: `apt-get update` and `apt-get install` run only when a listed package is
# not installed yet, so the usual run is a few dpkg queries.
#
# PostgreSQL 15 (Debian's postgresql-15: server binaries under /usr/lib/postgresql/15/bin, and
# the client for psql) is what the postgres:// tests run against. Nothing is started here:
# `make test` starts a throw-away cluster with scripts/postgres.sh and stops it at exit.
# Node 22 and the MCP peers come from npm via setup-tools.sh.
set -euo pipefail

APT_PACKAGES=(postgresql-15 postgresql-client-15)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "setup-services: nothing to install (${#APT_PACKAGES[@]} apt packages listed, all present)"
	exit 0
fi

[ "$(id -u)" = 0 ] || { echo "setup-services: need root to apt-get install ${missing[*]}" >&2; exit 1; }
echo "setup-services: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
