#!/usr/bin/env python3
"""The chaos run's client: 64 streams of greedy completions against a server whose remote
workers are stopped and killed mid-stream, with /health sampled every half second.

  chaos_client.py BASE_URL SOLO_JSON STOP_PID KILL_PID ADAPTER_DIR WORKER_TIMEOUT_S

SOLO_JSON maps each prompt (as JSON text) to the text of its run alone. Once every stream has
had its first chunks (all of them running, on every replica), the worker STOP_PID gets
SIGSTOP, a second later KILL_PID gets SIGKILL, and half a second after that an adapter whose
files block (a FIFO) is loaded. /health is sampled until the streams end and the failures
have had their time to show. Checks, one line each: every stream ends with its solo
run's exact text or with a clean error event; no stream waits longer than WORKER_TIMEOUT_S plus
a step between two chunks (a step: the 95th percentile of all gaps between chunks); /health answers every sample within a second with 200 (the
local replica serves throughout), and names both failed workers within WORKER_TIMEOUT_S plus
2 s; the adapter load is refused at once. Exit status 1 when any check fails."""
import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

base, solo_path, stop_pid, kill_pid, adapter_dir, worker_timeout = sys.argv[1:7]
worker_timeout = float(worker_timeout)
url = urllib.parse.urlparse(base)
solo = json.load(open(solo_path))
prompts = list(solo)
failures = 0


def check(ok, what, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + "chaos: " + what + ("" if ok or not detail else "\n     " + detail))
    failures += 0 if ok else 1


def connection(timeout=120):
    return http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)


class stream:
    """One streamed completion: its text, error events, and the arrival time of each chunk."""

    def __init__(self, prompt):
        self.prompt, self.text, self.errors, self.times, self.done = prompt, "", [], [], False

    def run(self):
        try:
            c = connection()
            body = {"prompt": json.loads(self.prompt), "max_tokens": 120, "temperature": 0,
                    "ignore_eos": True, "stream": True}
            c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            self.times.append(time.monotonic())
            for line in r:
                self.times.append(time.monotonic())
                line = line.decode().strip()
                if line == "data: [DONE]":
                    self.done = True
                elif line.startswith("data: {"):
                    chunk = json.loads(line[6:])
                    if "error" in chunk:
                        self.errors.append(chunk["error"].get("message", ""))
                    for choice in chunk.get("choices", []):
                        self.text += choice.get("text", "")
        except Exception as e:  # a cut connection is no clean end
            self.errors.append("client: %r" % e)
            self.done = False


streams = [stream(prompts[i % len(prompts)]) for i in range(64)]
threads = [threading.Thread(target=s.run) for s in streams]
start = time.monotonic()
for t in threads:
    t.start()

health = []  # (seconds since start, status, body, seconds the answer took)
stop_health = threading.Event()


def sample_health():
    while not stop_health.is_set():
        asked = time.monotonic()
        try:
            c = connection(timeout=5)
            c.request("GET", "/health")
            r = c.getresponse()
            health.append((asked - start, r.status, r.read().decode(), time.monotonic() - asked))
        except Exception as e:
            health.append((asked - start, 0, repr(e), time.monotonic() - asked))
        stop_health.wait(0.5)


sampler = threading.Thread(target=sample_health)
sampler.start()

# Every stream running (a few chunks each) before the first failure, whatever this machine's
# speed: the stopped and the killed worker then hold streams of their own.
while time.monotonic() - start < 60 and not all(len(s.times) >= 4 for s in streams):
    time.sleep(0.01)
os.kill(int(stop_pid), signal.SIGSTOP)
stopped_at = time.monotonic() - start
time.sleep(1.0)
os.kill(int(kill_pid), signal.SIGKILL)
killed_at = time.monotonic() - start
time.sleep(0.5)
asked = time.monotonic()
c = connection(timeout=30)
c.request("POST", "/v1/load_lora_adapter",
          json.dumps({"lora_name": "blocked", "lora_path": adapter_dir}), {"Content-Type": "application/json"})
r = c.getresponse()
adapter = (r.status, r.read().decode(), time.monotonic() - asked)

for t in threads:
    t.join(timeout=180)
# The failures' time to show on /health, streams done or not.
while time.monotonic() - start < stopped_at + worker_timeout * 1.25 + 3.0:
    time.sleep(0.1)
time.sleep(1.0)
stop_health.set()
sampler.join()

exact = sum(1 for s in streams if s.done and not s.errors and s.text == solo[s.prompt])
clean_errors = sum(1 for s in streams if s.done and s.errors)
broken = [s for s in streams if not ((s.done and not s.errors and s.text == solo[s.prompt]) or (s.done and s.errors))]
check(not broken, "every stream ends with its solo text (%d) or a clean error (%d)" % (exact, clean_errors),
      "; ".join("%s: done %s, errors %s, %d of %d chars" % (s.prompt, s.done, s.errors[:1], len(s.text),
                                                             len(solo[s.prompt])) for s in broken[:4]))
gaps = sorted(b - a for s in streams for a, b in zip(s.times, s.times[1:]))
longest = gaps[-1] if gaps else 0.0
step = gaps[int(0.95 * (len(gaps) - 1))] if gaps else 0.0  # a step of the busy server
# The stuck step is noticed at the first look (every quarter of the timeout) past the
# timeout; its requests then recompute on a live replica (one prefill of every moved
# request's tokens at once: about a second here, allowed 2.5 s for a machine busy with other
# tests) and decode their next token.
bound = worker_timeout * 1.25 + 2.5 + 2 * max(step, 0.1)
check(longest <= bound,
      "no stream waited past --worker-timeout plus a step between chunks (%.2f s; bound %.2f s, "
      "a step %.2f s)" % (longest, bound, step))
slow = [h for h in health if h[3] > 1.0]
check(not slow, "/health answered every sample within a second (%d samples)" % len(health),
      str(slow[:3]))
not_ok = [h for h in health if h[1] != 200]
check(not not_ok, "/health was 200 at every sample (the local replica served throughout)", str(not_ok[:3]))


def named_by(name):
    """When /health first named the worker `name` down, in seconds since start, or None."""
    for t, status, body, _ in health:
        if "'%s') is down" % name in body:
            return t
    return None


stop_named, kill_named = named_by("chaos-stopped"), named_by("chaos-killed")
check(stop_named is not None and stop_named - stopped_at <= worker_timeout + 2.0,
      "/health named the stopped worker within --worker-timeout + 2 s (%s s after the stop)" %
      (None if stop_named is None else round(stop_named - stopped_at, 2)))
check(kill_named is not None and kill_named - killed_at <= 2.0,
      "/health named the killed worker within 2 s (%s s after the kill)" %
      (None if kill_named is None else round(kill_named - killed_at, 2)))
check(400 <= adapter[0] < 500 and adapter[2] < 5.0,
      "an adapter whose files block is refused at once (%d in %.2f s)" % (adapter[0], adapter[2]), adapter[1])
sys.exit(1 if failures else 0)
