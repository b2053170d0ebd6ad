# Sourced by scripts/test: PostgreSQL for the state service tests
# (converge-server). Installs it from Debian's packages if missing, runs a
# throwaway cluster in "$cache/pg" on 127.0.0.1 (stopped when the calling
# script exits) and exports CONVERGE_TEST_DATABASE_URL (under CI=true the
# tests fail without it) and CONVERGE_TEST_POSTGRES_BIN, PostgreSQL's bin
# directory, for the test that runs (and restarts) a cluster of its own. PostgreSQL refuses to run as root: as root the
# cluster belongs to the `postgres` user the Debian package creates.
pg_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
if [ ! -x "$(pg_bindir)/initdb" ]; then
  echo "== installing PostgreSQL"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    sudo -n apt-get update -qq
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
fi
pg_bin="$(pg_bindir)"
pg_dir="$cache/pg"
if [ "$(id -u)" = 0 ]; then
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi
if [ -f "$pg_dir/data/postmaster.pid" ]; then
  as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
fi
rm -rf "$pg_dir"
mkdir -p "$pg_dir"
[ "$(id -u)" = 0 ] && chown postgres "$pg_dir"
as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U converge --auth=trust -E UTF8 >"$pg_dir/initdb.log"
pg_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $pg_dir -c fsync=off" start >/dev/null
# Stop only the cluster this script started: a later run in the same
# checkout replaces the directory and starts a cluster of its own there.
pg_postmaster="$(head -n 1 "$pg_dir/data/postmaster.pid")"
stop_own_postgres() {
  [ "$(head -n 1 "$pg_dir/data/postmaster.pid" 2>/dev/null)" = "$pg_postmaster" ] || return 0
  as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast stop >/dev/null 2>&1 || true
}
on_exit stop_own_postgres
as_pg "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U converge converge_test
export CONVERGE_TEST_DATABASE_URL="postgres://converge@127.0.0.1:$pg_port/converge_test"
# The balancer test runs a PostgreSQL of its own (it restarts it).
export CONVERGE_TEST_POSTGRES_BIN="$pg_bin"
echo "== PostgreSQL on 127.0.0.1:$pg_port ($pg_dir)"
