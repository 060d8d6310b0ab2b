#!/usr/bin/env bash
# Local NATS (JetStream) and PostgreSQL for waygraph's event-driven planners.
#
#   scripts/services.sh up       start what is not already listening, wait until ready
#   scripts/services.sh down     stop only what `up` started
#   scripts/services.sh status   each service, its URL, and who runs it
#
# Servers already listening on the configured ports (the test machines run
# both) are reported and left alone. Addresses come from WAYGRAPH_NATS_URL
# (default nats://127.0.0.1:4222) and WAYGRAPH_DATABASE_URL (default
# postgresql://postgres@127.0.0.1:5432/test). State (pids, data, logs) lives
# in WAYGRAPH_SERVICES_DIR (default <repo>/.services); data is kept across
# `down`/`up`, delete the folder to start from scratch.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="${WAYGRAPH_SERVICES_DIR:-$ROOT/.services}"
NATS_URL="${WAYGRAPH_NATS_URL:-nats://127.0.0.1:4222}"
DATABASE_URL="${WAYGRAPH_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test}"
WAIT_SECONDS="${WAYGRAPH_SERVICES_WAIT:-30}"

say() { printf '%s\n' "$*"; }
fail() {
    printf 'services.sh: %s\n' "$*" >&2
    exit 1
}

# Split a URL into globals URL_USER, URL_HOST, URL_PORT, URL_DB (no external tools).
parse_url() {
    local url="$1" default_port="$2" rest authority
    rest="${url#*://}"
    authority="${rest%%/*}"
    URL_DB=""
    if [[ "$rest" == */* ]]; then
        URL_DB="${rest#*/}"
        URL_DB="${URL_DB%%\?*}"
    fi
    URL_USER=""
    if [[ "$authority" == *@* ]]; then
        URL_USER="${authority%@*}"
        URL_USER="${URL_USER%%:*}"
        authority="${authority##*@}"
    fi
    URL_HOST="${authority%%:*}"
    URL_PORT="$default_port"
    if [[ "$authority" == *:* ]]; then
        URL_PORT="${authority##*:}"
    fi
    [[ -n "$URL_HOST" ]] || URL_HOST="127.0.0.1"
    [[ "$URL_PORT" =~ ^[0-9]+$ ]] || fail "bad port in URL '$url'"
}

# True when host:port accepts a TCP connection (bash's /dev/tcp, no netcat needed).
listening() {
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

is_local() {
    case "$1" in
    127.* | localhost | ::1 | 0.0.0.0) return 0 ;;
    *) return 1 ;;
    esac
}

wait_listening() {
    local name="$1" host="$2" port="$3" log="$4" waited=0
    until listening "$host" "$port"; do
        if ((waited >= WAIT_SECONDS * 10)); then
            say "$name did not accept connections on $host:$port within ${WAIT_SECONDS}s; log: $log" >&2
            tail -n 20 "$log" >&2 || true
            exit 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

# Install a Debian package when we are root with apt-get; otherwise explain.
ensure_package() {
    local package="$1" probe="$2"
    if [[ -n "$probe" ]]; then
        return 0
    fi
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing the Debian package $package ..."
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >/dev/null ||
            { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >/dev/null; } ||
            fail "apt-get install $package failed"
        return 0
    fi
    fail "$package is not installed; install it (Debian/Ubuntu: sudo apt-get install $package) or point WAYGRAPH_${3}_URL at a running server"
}

pg_bindir() {
    local dir
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        # Debian links the tools into PATH; psql/createdb live beside the real ones.
        dirname "$(readlink -f "$(command -v pg_ctl)")"
        return 0
    fi
    # Newest major version first.
    dir="$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r | head -n 1)"
    if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
        printf '%s\n' "$dir"
        return 0
    fi
    return 1
}

# PostgreSQL refuses to run as root: as root, run its tools as the postgres user.
as_pg_owner() {
    if [[ "$(id -u)" -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

state_file() { printf '%s/%s.started\n' "$STATE_DIR" "$1"; }

owner() {
    if [[ -f "$(state_file "$1")" ]]; then
        say "started by services.sh"
    else
        say "external, left alone"
    fi
}

nats_up() {
    parse_url "$NATS_URL" 4222
    local host="$URL_HOST" port="$URL_PORT" dir="$STATE_DIR/nats"
    if listening "$host" "$port"; then
        say "nats: already running at nats://$host:$port ($(owner nats))"
        return 0
    fi
    is_local "$host" || fail "nats: nothing listens at $host:$port and it is not this machine; start it there"
    local found=""
    found="$(command -v nats-server || true)"
    [[ -n "$found" || ! -x /usr/sbin/nats-server ]] || found=/usr/sbin/nats-server
    ensure_package nats-server "$found" NATS
    found="$(command -v nats-server || printf '/usr/sbin/nats-server')"
    mkdir -p "$dir/data"
    # setsid: the server outlives this shell and ignores its terminal's Ctrl-C.
    setsid "$found" -js -a "$host" -p "$port" -sd "$dir/data" -l "$dir/nats.log" \
        </dev/null >>"$dir/nats.out" 2>&1 &
    local pid=$!
    printf 'pid=%s\nurl=nats://%s:%s\n' "$pid" "$host" "$port" >"$(state_file nats)"
    wait_listening nats "$host" "$port" "$dir/nats.log"
    say "nats: started at nats://$host:$port (JetStream, store $dir/data, pid $pid)"
}

postgres_up() {
    parse_url "$DATABASE_URL" 5432
    local host="$URL_HOST" port="$URL_PORT" user="${URL_USER:-postgres}" db="${URL_DB:-test}"
    local dir="$STATE_DIR/postgres" bindir
    if listening "$host" "$port"; then
        say "postgresql: already running at $host:$port ($(owner postgres))"
        return 0
    fi
    is_local "$host" || fail "postgresql: nothing listens at $host:$port and it is not this machine; start it there"
    bindir="$(pg_bindir || true)"
    ensure_package postgresql "$bindir" DATABASE
    bindir="$(pg_bindir)" || fail "postgresql is installed but initdb/pg_ctl were not found"
    mkdir -p "$dir"
    if [[ "$(id -u)" -eq 0 ]]; then
        chown postgres: "$dir"
        chmod 700 "$dir"
    fi
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
        as_pg_owner "$bindir/initdb" -D "$dir/data" -U "$user" -A trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
            fail "initdb failed; see $dir/initdb.log"
    fi
    as_pg_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t "$WAIT_SECONDS" \
        -o "-p $port -c listen_addresses=$host -k $dir" start >/dev/null ||
        fail "postgresql did not start; see $dir/postgres.log"
    printf 'datadir=%s\nbindir=%s\nurl=postgresql://%s@%s:%s/%s\n' "$dir/data" "$bindir" "$user" "$host" "$port" "$db" \
        >"$(state_file postgres)"
    wait_listening postgresql "$host" "$port" "$dir/postgres.log"
    if ! as_pg_owner "$bindir/psql" -h "$host" -p "$port" -U "$user" -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
        as_pg_owner "$bindir/createdb" -h "$host" -p "$port" -U "$user" "$db"
    fi
    say "postgresql: started at postgresql://$user@$host:$port/$db (data $dir/data)"
}

state_value() { sed -n "s/^$2=//p" "$1"; }

nats_down() {
    local file pid
    file="$(state_file nats)"
    if [[ ! -f "$file" ]]; then
        say "nats: not started by services.sh (nothing to stop)"
        return 0
    fi
    pid="$(state_value "$file" pid)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        say "nats: stopped (pid $pid)"
    else
        say "nats: was not running any more"
    fi
    rm -f "$file"
}

postgres_down() {
    local file datadir bindir
    file="$(state_file postgres)"
    if [[ ! -f "$file" ]]; then
        say "postgresql: not started by services.sh (nothing to stop)"
        return 0
    fi
    datadir="$(state_value "$file" datadir)"
    bindir="$(state_value "$file" bindir)"
    if as_pg_owner "$bindir/pg_ctl" -D "$datadir" status >/dev/null 2>&1; then
        as_pg_owner "$bindir/pg_ctl" -D "$datadir" -m fast -w stop >/dev/null
        say "postgresql: stopped (data kept in $datadir)"
    else
        say "postgresql: was not running any more"
    fi
    rm -f "$file"
}

show_status() {
    local name="$1" url="$2" default_port="$3" shown
    parse_url "$url" "$default_port"
    shown="$url"
    if listening "$URL_HOST" "$URL_PORT"; then
        say "$name: up    $shown ($(owner "$name"))"
    else
        say "$name: down  $shown"
        return 1
    fi
}

usage() {
    say "usage: scripts/services.sh up|down|status"
    say "  WAYGRAPH_NATS_URL      NATS server (default nats://127.0.0.1:4222)"
    say "  WAYGRAPH_DATABASE_URL  PostgreSQL (default postgresql://postgres@127.0.0.1:5432/test)"
    say "  WAYGRAPH_SERVICES_DIR  pids, data and logs of what up starts (default <repo>/.services)"
}

main() {
    local command="${1:-}"
    case "$command" in
    up)
        mkdir -p "$STATE_DIR"
        nats_up
        postgres_up
        ;;
    down)
        nats_down
        postgres_down
        ;;
    status)
        local rc=0
        show_status nats "$NATS_URL" 4222 || rc=1
        show_status postgres "$DATABASE_URL" 5432 || rc=1
        return "$rc"
        ;;
    -h | --help | help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
}

main "$@"
