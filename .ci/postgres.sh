#!/usr/bin/env bash
# Start a local PostgreSQL for the store tests and print how to reach it.
#
#   eval "$(.ci/postgres.sh)"     # sets WEAKPROMPT_PG_URL for tests/test_store_postgres.py
#
# Run as root on Debian/Ubuntu. Installs the server if it is missing, starts
# the cluster, creates the login role and database (both idempotent: running
# it again changes nothing), waits until the server accepts connections as
# that role, then prints one line on stdout: `export WEAKPROMPT_PG_URL=...`.
# Everything else goes to stderr. Overridable: WEAKPROMPT_PG_USER,
# WEAKPROMPT_PG_PASSWORD, WEAKPROMPT_PG_DB, WEAKPROMPT_PG_WAIT_SECONDS.
set -euo pipefail

user=${WEAKPROMPT_PG_USER:-weakprompt}
password=${WEAKPROMPT_PG_PASSWORD:-weakprompt}
database=${WEAKPROMPT_PG_DB:-weakprompt_test}
wait_seconds=${WEAKPROMPT_PG_WAIT_SECONDS:-60}

say() { echo "postgres.sh: $*" >&2; }
die() { say "$*"; exit 1; }

for name in "$user" "$database"; do
  [[ "$name" =~ ^[a-z_][a-z0-9_]*$ ]] || die "role and database names must be plain identifiers, got '$name'"
done
[[ "$password" != *"'"* ]] || die "the password must not contain a single quote"
[[ "$(id -u)" == 0 ]] || die "run as root (it installs and starts the server)"

if ! command -v pg_lsclusters >/dev/null 2>&1 || [[ -z "$(pg_lsclusters -h 2>/dev/null)" ]]; then
  say "installing PostgreSQL"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi

# The newest installed cluster: "version name port status owner datadir logfile".
cluster=$(pg_lsclusters -h | sort -V | tail -n 1)
if [[ -z "$cluster" ]]; then
  version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1)
  [[ -n "$version" ]] || die "no PostgreSQL server found under /usr/lib/postgresql"
  say "creating cluster $version/main"
  pg_createcluster "$version" main >&2
  cluster=$(pg_lsclusters -h | sort -V | tail -n 1)
fi
read -r version name port status _ <<<"$cluster"
if [[ "$status" != online* ]]; then
  say "starting cluster $version/$name on port $port"
  pg_ctlcluster "$version" "$name" start >&2
fi

as_postgres() { (cd / && runuser -u postgres -- psql -p "$port" -v ON_ERROR_STOP=1 -qtA "$@"); }

ready=""
for _ in $(seq 1 "$((wait_seconds * 2))"); do
  if pg_isready -q -h 127.0.0.1 -p "$port" && as_postgres -c "SELECT 1" >/dev/null 2>&1; then
    ready=yes
    break
  fi
  sleep 0.5
done
[[ -n "$ready" ]] || die "the server on port $port did not accept connections within ${wait_seconds}s"

if [[ "$(as_postgres -c "SELECT 1 FROM pg_roles WHERE rolname = '$user'")" != 1 ]]; then
  say "creating role $user"
  as_postgres -c "CREATE ROLE $user LOGIN CREATEDB PASSWORD '$password'"
else
  as_postgres -c "ALTER ROLE $user LOGIN CREATEDB PASSWORD '$password'"
fi
if [[ "$(as_postgres -c "SELECT 1 FROM pg_database WHERE datname = '$database'")" != 1 ]]; then
  say "creating database $database"
  as_postgres -c "CREATE DATABASE $database OWNER $user"
fi

# The tests connect over TCP with a password: check exactly that.
PGPASSWORD="$password" psql -h 127.0.0.1 -p "$port" -U "$user" -d "$database" -qtA -c "SELECT 1" >/dev/null \
  || die "cannot log in as $user to $database on 127.0.0.1:$port"

say "ready: PostgreSQL $version on 127.0.0.1:$port, database $database"
echo "export WEAKPROMPT_PG_URL=postgresql+psycopg://$user:$password@127.0.0.1:$port/$database"
