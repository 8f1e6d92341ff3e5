#!/usr/bin/env bash
# Builds and installs the pgvector extension (0.8.0) into Debian's PostgreSQL 15, for the
# rag-store pgvector tests. Run by scripts/setup-services.sh after PostgreSQL is installed.
#
# Debian 12 does not package pgvector, so the source comes from the source package of the next
# Debian release (trixie: pgvector 0.8.0-x, which also drops upstream's -march=native so the
# build runs on any x86-64), fetched with apt from the Debian mirror this machine already uses,
# and is compiled against the system's own postgresql-server-dev-15.
#
# The trixie source index lives in a private temporary apt state (its own sources.list, lists and
# cache dirs, passed with -o options): the system's apt sources and caches are never changed, so
# no trixie binary package can ever be installed by accident.
#
# Idempotent: when vector.control (default_version 0.8.0) and vector.so are already in the
# server's extension and library dirs, it only reads those two files.
#
# Environment:
#   PG_CONFIG             pg_config of the target server (default /usr/lib/postgresql/15/bin/pg_config)
#   DESTDIR               stage the install under this dir instead of / (for a trial build; the
#                         "already installed" check then looks there too)
#   HELIX_DEBIAN_MIRROR   Debian mirror URL to fetch the source from; by default the first `deb`
#                         source of this release's main suite in the system's apt configuration
#   HELIX_APT_UPDATED=1   the system's apt lists are fresh (setup-services.sh just updated them)
set -euo pipefail

PGVECTOR_VERSION=0.8.0
SOURCE_SUITE=trixie
PG_MAJOR=15
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PG_MAJOR/bin/pg_config}
DESTDIR=${DESTDIR:-}
BUILD_DEPS=(postgresql-server-dev-$PG_MAJOR build-essential)

log() { printf 'setup-pgvector: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Debian's layout, used until postgresql-client-15 (which ships pg_config) is installed.
sharedir=/usr/share/postgresql/$PG_MAJOR
pkglibdir=/usr/lib/postgresql/$PG_MAJOR/lib
locate_dirs() {
	if [ -x "$PG_CONFIG" ]; then
		sharedir=$("$PG_CONFIG" --sharedir)
		pkglibdir=$("$PG_CONFIG" --pkglibdir)
	fi
}

installed() {
	local control=$DESTDIR$sharedir/extension/vector.control
	[ -f "$control" ] && [ -f "$DESTDIR$pkglibdir/vector.so" ] &&
		grep -Eq "^default_version *= *'$PGVECTOR_VERSION'" "$control"
}

locate_dirs
if installed; then
	log "pgvector $PGVECTOR_VERSION already installed (${DESTDIR}$pkglibdir/vector.so)"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "pgvector $PGVECTOR_VERSION is not installed in $DESTDIR$sharedir; run this script as root to build it"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script builds pgvector on Debian only"

# Build dependencies, from the system's own release.
missing=()
for pkg in "${BUILD_DEPS[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing build dependencies: ${missing[*]}"
	[ "${HELIX_APT_UPDATED:-}" = 1 ] || apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found (install postgresql-client-$PG_MAJOR, or set PG_CONFIG)"
locate_dirs

# debian_mirror prints the URI of the first enabled `deb` source for this release's main suite
# (e.g. bookworm, not bookworm-updates or -security), from the one-line *.list and the deb822
# *.sources files apt itself reads.
debian_mirror() {
	local codename list parts
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || return 1
	eval "$(apt-config shell list Dir::Etc::SourceList/f parts Dir::Etc::SourceParts/d)"
	{
		[ -f "$list" ] && awk -v want="$codename" '
			$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
				if ($(i+1) == want && $i ~ /^https?:/) { print $i; exit }
			}' "$list"
		for f in "$parts"/*.list; do
			[ -f "$f" ] || continue
			awk -v want="$codename" '
				$1 == "deb" {
					i = 2
					if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
					if ($(i+1) == want && $i ~ /^https?:/) { print $i; exit }
				}' "$f"
		done
		for f in "$parts"/*.sources; do
			[ -f "$f" ] || continue
			# One deb822 stanza per paragraph; a stanza qualifies when it is enabled, has
			# Types deb and Suites containing the codename itself.
			awk -v want="$codename" '
				function flush() {
					if (types ~ /(^| )deb( |$)/ && enabled != "no" && (" " suites " ") ~ (" " want " "))
						for (k = 1; k <= split(uris, u, " "); k++) if (u[k] ~ /^https?:/) { print u[k]; exit }
					types = ""; suites = ""; uris = ""; enabled = ""
				}
				/^[ \t]*#/ { next }
				/^[ \t]*$/ { flush(); next }
				{
					key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
					if (key == "types") types = val
					else if (key == "suites") suites = val
					else if (key == "uris") uris = val
					else if (key == "enabled") enabled = tolower(val)
				}
				END { flush() }' "$f"
		done
	} | head -n1
}

mirror=${HELIX_DEBIAN_MIRROR:-$(debian_mirror || true)}
[ -n "$mirror" ] || die "no Debian mirror found in the apt sources for this release; set HELIX_DEBIAN_MIRROR"

work=$(mktemp -d "${TMPDIR:-/tmp}/helix-pgvector.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
echo "deb-src $mirror $SOURCE_SUITE main" >"$work/sources.list"
# apt downloads as the unprivileged _apt user when that user can reach the target dirs.
chmod 0755 "$work"
if id _apt >/dev/null 2>&1; then chown _apt "$work/src"; fi
apt_private=(
	-o "Dir::Etc::SourceList=$work/sources.list"
	-o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$work/lists"
	-o "Dir::Cache=$work/cache"
)

started=$(date +%s)
log "fetching the $SOURCE_SUITE source index (private apt state in $work)"
apt-get -qq "${apt_private[@]}" update >&2 || die "apt-get update of the private $SOURCE_SUITE deb-src list failed"
version=$(apt-cache "${apt_private[@]}" showsrc pgvector | awk '$1 == "Version:" { print $2 }' |
	grep -E "^$PGVECTOR_VERSION-" | sort -V | tail -n1 || true)
[ -n "$version" ] || die "no pgvector $PGVECTOR_VERSION-x source package in $SOURCE_SUITE main"
log "fetching pgvector $version source"
(cd "$work/src" && apt-get -qq "${apt_private[@]}" source "pgvector=$version" >"$work/build.log" 2>&1) ||
	{ cat "$work/build.log" >&2; die "apt-get source pgvector=$version failed"; }
srcdir=$work/src/pgvector-$PGVECTOR_VERSION
[ -f "$srcdir/Makefile" ] || die "unpacked source not found at $srcdir"

log "building pgvector $version against $("$PG_CONFIG" --version)"
make -C "$srcdir" -s -j"$(nproc)" USE_PGXS=1 PG_CONFIG="$PG_CONFIG" >"$work/build.log" 2>&1 ||
	{ tail -n 40 "$work/build.log" >&2; die "pgvector build failed"; }
make -C "$srcdir" -s USE_PGXS=1 PG_CONFIG="$PG_CONFIG" ${DESTDIR:+DESTDIR="$DESTDIR"} install >>"$work/build.log" 2>&1 ||
	{ tail -n 40 "$work/build.log" >&2; die "pgvector install failed"; }
installed || die "pgvector install finished but vector.control/vector.so are not in $DESTDIR$sharedir/extension and $DESTDIR$pkglibdir"
log "pgvector $version installed into ${DESTDIR}$pkglibdir in $(($(date +%s) - started))s"
