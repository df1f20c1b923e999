# shellcheck shell=bash
# Shared by the bench scripts that run their own `actorllm serve` (source it; bash only).
#
#   start_server LOG PORT [serve flags...]   starts ${ACTORLLM_BIN:-build/actorllm} serve on
#                                            127.0.0.1:PORT with its output in LOG, sets
#                                            server_pid, and returns once /health answers; if
#                                            the server exits or stays unhealthy for 120 s, it
#                                            prints LOG's tail and exits 1
#   stop_server                              stops it (a no-op when none runs); scripts call it
#                                            from their EXIT trap

server_pid=

start_server() {
  local log=$1 port=$2
  shift 2
  "${ACTORLLM_BIN:-build/actorllm}" serve --host 127.0.0.1 --port "$port" "$@" >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 1200); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "actorllm serve $* did not become healthy:"
  tail -n 20 "$log"
  exit 1
}

stop_server() {
  [[ -n "$server_pid" ]] || return 0
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
