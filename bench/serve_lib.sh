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

# Whether GET /health on 127.0.0.1:PORT answers 200: curl, or bash's /dev/tcp where curl is
# absent (a GPU machine's bare image).
healthy() {
  local port=$1 status
  if command -v curl >/dev/null; then
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1
    return
  fi
  exec 9<>"/dev/tcp/127.0.0.1/$port" 2>/dev/null || return 1
  printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&9
  read -r -t 2 _ status _ <&9
  exec 9>&-
  [[ $status == 200 ]]
}

start_server() {
  local log=$1 port=$2
  shift 2
  "${ACTORLLM_BIN:-build/actorllm}" serve --host 127.0.0.1 --port "$port" "$@" >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 1200); do
    healthy "$port" && return 0
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
