#!/usr/bin/env bash
# Starts and stops the throw-away PostgreSQL cluster that Helix's tests use.
#
#   eval "$(scripts/postgres.sh start)"   # initdb + pg_ctl start; prints export HELIX_POSTGRES_URL=…
#   scripts/postgres.sh stop              # stops it and removes its directory
#
# The cluster lives in $HELIX_PG_DIR (default .pgtest/ in the repository, ignored by git),
# listens on 127.0.0.1 at a free port, and has a superuser "helix" with password "helix" on
# database "helix" (password auth over TCP, so the tests exercise authentication failures
# too) with the pgvector extension created in it when pgvector is installed. Debian's
# PostgreSQL 15 binaries are used (scripts/setup-services.sh installs them and builds pgvector);
# PG_BIN overrides where they are. initdb refuses to run as root, so as root the cluster is
# owned by and run as the "postgres" user.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DIR=${HELIX_PG_DIR:-$PWD/.pgtest}
PG_BIN=${PG_BIN:-}
if [ -z "$PG_BIN" ]; then
	for v in 17 16 15; do
		if [ -x "/usr/lib/postgresql/$v/bin/initdb" ]; then PG_BIN=/usr/lib/postgresql/$v/bin; break; fi
	done
fi
[ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] || { echo "postgres.sh: no initdb found (run scripts/setup-services.sh or set PG_BIN)" >&2; exit 1; }

as_owner() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}

case "${1:-}" in
start)
	if [ -f "$DIR/port" ] && as_owner "$PG_BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
		port=$(cat "$DIR/port")
	else
		rm -rf "$DIR"
		mkdir -p "$DIR"
		[ "$(id -u)" = 0 ] && chown postgres: "$DIR"
		printf 'helix\n' >"$DIR/pwfile"
		[ "$(id -u)" = 0 ] && chown postgres: "$DIR/pwfile"
		as_owner "$PG_BIN/initdb" -D "$DIR/data" -U helix --pwfile="$DIR/pwfile" -A scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 ||
			{ cat "$DIR/initdb.log" >&2; exit 1; }
		port=$(free_port)
		echo "$port" >"$DIR/port"
		as_owner "$PG_BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -k $DIR -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >&2 ||
			{ cat "$DIR/server.log" >&2; exit 1; }
		PGPASSWORD=helix "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U helix -d postgres -qc 'CREATE DATABASE helix' >&2
		# pgvector (scripts/setup-pgvector.sh) for the rag-store tests; databases created later by
		# the tests do not inherit it and run CREATE EXTENSION IF NOT EXISTS vector themselves.
		if [ -f "$("$PG_BIN/pg_config" --sharedir)/extension/vector.control" ]; then
			PGPASSWORD=helix "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U helix -d helix -v ON_ERROR_STOP=1 \
				-qc 'CREATE EXTENSION IF NOT EXISTS vector' >&2
		else
			echo "postgres.sh: pgvector is not installed (run scripts/setup-services.sh as root); database helix has no vector extension" >&2
		fi
	fi
	echo "export HELIX_POSTGRES_URL=postgres://helix:helix@127.0.0.1:$port/helix"
	echo "export HELIX_PG_BIN=$PG_BIN"
	echo "export HELIX_PG_DATA=$DIR/data"
	;;
stop)
	if [ -d "$DIR/data" ]; then
		as_owner "$PG_BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$DIR"
	;;
*)
	echo "usage: scripts/postgres.sh start|stop" >&2
	exit 2
	;;
esac
