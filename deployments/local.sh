#!/usr/bin/env bash
# A local Prefect server, the `curate-process` work pool, the deployments of
# deployments/prefect.yaml and a worker, all on this machine, bound to 127.0.0.1.
#
#   deployments/local.sh              # = up, then run curate-ingest/demo and wait for it
#   deployments/local.sh up           # server, work pool, deploy --all, worker
#   deployments/local.sh run NAME [prefect deployment run options...]   # trigger, wait
#   deployments/local.sh status       # what is running, and the API URL to export
#   deployments/local.sh stop         # stop the worker, then the server (by PID)
#
# Environment: PORT (4200), CURATE_LOCAL_DIR (PID files and logs; default
# ~/.local/state/corpus-curator), CURATE_REPO (the checkout runs work in; default:
# this one), PREFECT (the prefect command; default: .venv/bin/prefect if present).
# The server keeps its history in your Prefect home (PREFECT_HOME, ~/.prefect).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
PORT="${PORT:-4200}"
STATE="${CURATE_LOCAL_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/corpus-curator}"
POOL="curate-process"
if [[ -z "${PREFECT:-}" ]]; then
  if [[ -x "$REPO/.venv/bin/prefect" ]]; then PREFECT="$REPO/.venv/bin/prefect"; else PREFECT=prefect; fi
fi
if [[ -z "${CURATE:-}" ]]; then
  if [[ -x "$REPO/.venv/bin/curate" ]]; then CURATE="$REPO/.venv/bin/curate"; else CURATE=curate; fi
fi
export PREFECT_API_URL="http://127.0.0.1:${PORT}/api"  # this server, whatever the profile says
export CURATE_REPO="${CURATE_REPO:-$REPO}"
export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false  # no telemetry (offline machines)
export RAY_USAGE_STATS_ENABLED=0

mkdir -p "$STATE"
SERVER_PID="$STATE/server.pid"
WORKER_PID="$STATE/worker.pid"

say() { printf '[local.sh] %s\n' "$*"; }

alive() {  # alive PIDFILE: the recorded process is running
  [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

start_bg() {  # start_bg PIDFILE LOG CMD...: in its own session, so stop reaches its children
  local pidfile="$1" log="$2"
  shift 2
  if command -v setsid >/dev/null; then
    setsid "$@" >"$log" 2>&1 < /dev/null &
  else
    "$@" >"$log" 2>&1 < /dev/null &
  fi
  echo $! >"$pidfile"
}

stop_pid() {  # stop_pid PIDFILE NAME: TERM, a second TERM after 10 s (workers need it), KILL
  local pidfile="$1" name="$2" pid target
  if ! alive "$pidfile"; then
    say "$name: not running"
    rm -f "$pidfile"
    return 0
  fi
  pid="$(cat "$pidfile")"
  # its own session (setsid): signal the whole group, which includes its children
  if [[ "$(ps -o pgid= -p "$pid" | tr -d ' ')" == "$pid" ]]; then target="-$pid"; else target="$pid"; fi
  say "stopping $name (pid $pid)"
  kill -TERM -- "$target" 2>/dev/null || true
  for i in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || break
    if [[ "$i" == 10 ]]; then kill -TERM -- "$target" 2>/dev/null || true; fi
    sleep 1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name did not stop: SIGKILL"
    kill -KILL -- "$target" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

healthy() {  # the API answers its health check
  if command -v curl >/dev/null; then
    curl -fsS "$PREFECT_API_URL/health" >/dev/null 2>&1
  else
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
      "$PREFECT_API_URL/health" >/dev/null 2>&1
  fi
}

wait_for_server() {
  local i
  for i in $(seq 1 120); do
    healthy && return 0
    alive "$SERVER_PID" || { say "the server exited: see $STATE/server.log"; return 1; }
    sleep 1
  done
  say "the server did not answer within 120 s: see $STATE/server.log"
  return 1
}

up() {
  cd "$REPO"  # prefect deploy resolves entrypoints and records the checkout from here
  if alive "$SERVER_PID"; then
    say "server already running (pid $(cat "$SERVER_PID"))"
  else
    say "starting the Prefect server on 127.0.0.1:$PORT (log: $STATE/server.log)"
    start_bg "$SERVER_PID" "$STATE/server.log" \
      "$PREFECT" server start --host 127.0.0.1 --port "$PORT" --no-ui
  fi
  wait_for_server
  say "work pool $POOL"
  "$PREFECT" --no-prompt work-pool create "$POOL" --type process --overwrite >/dev/null
  say "deploying deployments/prefect.yaml"
  "$PREFECT" --no-prompt deploy --prefect-file deployments/prefect.yaml --all >"$STATE/deploy.log" 2>&1 \
    || { cat "$STATE/deploy.log"; exit 1; }
  grep -o "Deployment '[^']*'" "$STATE/deploy.log" | sed 's/^/  /' || true
  if alive "$WORKER_PID"; then
    say "worker already running (pid $(cat "$WORKER_PID"))"
  else
    say "starting a worker on $POOL (log: $STATE/worker.log)"
    start_bg "$WORKER_PID" "$STATE/worker.log" "$PREFECT" worker start --pool "$POOL"
  fi
  say "ready: export PREFECT_API_URL=$PREFECT_API_URL"
}

run() {  # run NAME [options]: trigger a deployment run and wait until it ends
  local name="${1:?run needs a deployment name, e.g. curate-ingest/demo}"
  shift
  alive "$WORKER_PID" || { say "no worker: run '$0 up' first"; exit 1; }
  "$PREFECT" --no-prompt deployment run "$name" --watch --watch-timeout 3600 "$@"
}

status() {
  if alive "$SERVER_PID"; then say "server: pid $(cat "$SERVER_PID"), $PREFECT_API_URL"; else say "server: stopped"; fi
  if alive "$WORKER_PID"; then say "worker: pid $(cat "$WORKER_PID"), pool $POOL"; else say "worker: stopped"; fi
  say "logs: $STATE"
}

stop() {
  stop_pid "$WORKER_PID" worker  # the worker first: it must not lose its server mid-run
  stop_pid "$SERVER_PID" server
}

demo() {
  up
  if [[ ! -d "$CURATE_REPO/demo-run/raw" ]]; then
    say "generating the demo corpus in $CURATE_REPO/demo-run/raw"
    (cd "$CURATE_REPO" && "$CURATE" demo-corpus --out demo-run/raw)
  fi
  say "running curate-ingest/demo (the worker log shows its progress: $STATE/worker.log)"
  run curate-ingest/demo
  say "done: $CURATE_REPO/demo-run/ingested/ingest_report.json"
  say "'$0 stop' stops the worker and the server"
}

case "${1:-demo}" in
  demo) demo ;;
  up) up ;;
  run) shift; run "$@" ;;
  status) status ;;
  stop) stop ;;
  *) echo "usage: $0 [demo|up|run NAME [options]|status|stop]" >&2; exit 2 ;;
esac
