#!/usr/bin/env bash
# The TimescaleDB server the tests of the TimescaleDB path use, next to the plain PostgreSQL on 5432:
# TimescaleDB built into this machine's PostgreSQL (../shared/timescaledb/install.sh, about 10 minutes on
# 2 cores the first time, skipped when installed), then a cluster of its own named "timescale" on
# 127.0.0.1:5433 (SORTIE_TIMESCALE_PORT) that preloads it, with trust auth on loopback. Idempotent: an
# existing cluster is (re)configured and started, never dropped. Needs root (apt-get, pg_createcluster).
#
#   bash scripts/timescale-cluster.sh
#   SORTIE_TEST_TIMESCALE_URL=postgres://postgres@127.0.0.1:5433/postgres   # the tests' default
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${SORTIE_TIMESCALE_PORT:-5433}"
INSTALLER="${SORTIE_TIMESCALE_INSTALLER:-$(cd .. && pwd)/shared/timescaledb/install.sh}"
major="$(ls /usr/lib/postgresql | sort -n | tail -1)"

if [ -f "$INSTALLER" ]; then
  bash "$INSTALLER"   # skips when the tested version is installed
elif [ -f "/usr/share/postgresql/$major/extension/timescaledb.control" ]; then
  echo "timescale-cluster: no installer at $INSTALLER; using the TimescaleDB already installed"
else
  echo "timescale-cluster: TimescaleDB is not installed and there is no installer at $INSTALLER (set SORTIE_TIMESCALE_INSTALLER)" >&2
  exit 1
fi

if ! pg_lsclusters -h | awk '{print $1"/"$2}' | grep -qx "$major/timescale"; then
  pg_createcluster "$major" timescale --port "$PORT" -- --auth=trust --encoding=UTF8 >/dev/null
fi
conf="/etc/postgresql/$major/timescale"
cat >"$conf/conf.d/sortie-timescale.conf" <<CONF
# Written by scripts/timescale-cluster.sh: the cluster of the TimescaleDB tests.
port = $PORT
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'timescaledb'
timescaledb.telemetry_level = off
max_connections = 200
CONF
cat >"$conf/pg_hba.conf" <<HBA
# Written by scripts/timescale-cluster.sh: loopback only, trust (a test server, like the one on 5432).
local all all trust
host all all 127.0.0.1/32 trust
host all all ::1/128 trust
HBA
if pg_lsclusters -h | awk -v c="timescale" '$2==c {print $4}' | grep -qx online; then
  pg_ctlcluster --skip-systemctl-redirect "$major" timescale restart
else
  pg_ctlcluster --skip-systemctl-redirect "$major" timescale start
fi
for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p "$PORT" -q && break; sleep 1; done
psql -h 127.0.0.1 -p "$PORT" -U postgres -Atc "select 'timescale cluster on $PORT: ' || current_setting('shared_preload_libraries') || ', timescaledb ' || default_version from pg_available_extensions where name = 'timescaledb'"
