#!/usr/bin/env python3
"""Soak test for a running `actorllm serve`: saturating streaming load for a fixed time from a
mix of well-behaved and badly-behaved clients, with the server's RSS, open fds, KV blocks and
queues sampled throughout. Python 3 standard library only (asyncio raw sockets, HTTP/1.1 and a
minimal WebSocket client). bench/soak.sh starts the server and runs this.

  bench/soak.py --port 8000 --pid SERVER_PID --minutes 10 --concurrency 64 [--json-out F]

Clients (each kind a share of --concurrency, every client looping until the time is up):
  stream      streaming /v1/completions on keep-alive connections, every answer checked
  nonstream   non-streamed /v1/completions, checked
  disconnect  streams that the client closes after a few tokens (FIN or RST)
  pipeline    two requests in one write on a keep-alive connection, answered in order, checked
  ws          /v1/ws: three calls at a time, some cancelled after their first chunk, some at
              once, and some connections closed with calls running
  slow        streams read 256 bytes at a time with a sleep between reads (4 KiB receive
              buffer), checked
  never       streams that are sent and never read (4 KiB receive buffer), the socket held for
              up to --never-hold seconds (past the server's 30 s write cut-off) and then closed

Every request asks for ignore_eos, logprobs 0 and the usage. A checked answer must carry the
X-Request-Id it was sent with, a completion id no other answer had, exactly max_tokens tokens
(counted from the logprobs), finish_reason "length", a usage equal to the prompt's /tokenize
count and the tokens received, and end with exactly one [DONE] (one "done" message over the
WebSocket). A WebSocket call gets exactly one closing message; no chunk follows "cancelled".

Checks, each a failure reason when it does not hold (exit status 1):
  * no client saw an error, a wrong answer or a stuck request (--request-timeout), and every
    request the clients started ended (no lost request); no completion id appeared twice
  * the server's request_success_total (all reasons) rose by exactly the number of requests
    the clients submitted, and its aborts by no more than the clients interrupted
  * after the run and an idle pause (--idle): KV blocks in use (num_gpu_blocks - free - cached,
    device and cpu pools) are 0, and running, waiting and swapped are 0
  * growth: warm-up is the first --warmup share of the run (default 20 %); the reference is the
    highest value in the last quarter of warm-up; after warm-up, and at the idle end, RSS must
    stay <= reference * (1 + --rss-tolerance) (default +10 %) and open fds less the client's
    own open sockets <= reference + --fd-tolerance (default +16)
  * the server process stayed up and /health answers 200 at the end; every client kind ran
"""
import argparse
import asyncio
import base64
import hashlib
import json
import os
import random
import re
import socket
import statistics
import struct
import sys
import time

KINDS = ["stream", "nonstream", "disconnect", "pipeline", "ws", "slow", "never"]
DEFAULT_MIX = "stream=0.30,nonstream=0.10,disconnect=0.10,pipeline=0.10,ws=0.15,slow=0.10,never=0.15"
PROMPTS = [
    "Once upon a time",
    "The little dog ran to the park and",
    "Tom and Lily were playing with their toys when",
    "One day, a big red ball rolled down the hill. The children",
    "In a small village by the sea there lived an old fisherman who",
    "She looked at the sky and saw",
    "The cat was hungry, so it went to the kitchen to find some food. There it saw a",
    "Mom said it was time for bed, but Ben wanted",
]


class ClientError(Exception):
    """A wrong or missing answer; the message is the failure reason."""


# --------------------------------------------------------------------------- sockets


class Conn:
    """A TCP connection on the event loop with its own read buffer: a client reads exactly as
    fast as it consumes (read_size bytes per recv, read_delay seconds before each)."""

    def __init__(self, soak, sock, read_size, read_delay, counted):
        self.soak, self.sock = soak, sock
        self.read_size, self.read_delay = read_size, read_delay
        self.buf = bytearray()
        self.counted = counted
        self.closed = False

    @classmethod
    async def open(cls, soak, rcvbuf=None, read_size=65536, read_delay=0.0, counted=True):
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await loop.sock_connect(sock, (soak.host, soak.port))
        except BaseException:
            sock.close()
            raise
        conn = cls(soak, sock, read_size, read_delay, counted)
        if counted:
            soak.open_sockets += 1
        return conn

    async def send(self, data):
        await asyncio.get_running_loop().sock_sendall(self.sock, data)

    async def _fill(self):
        if self.read_delay:
            await asyncio.sleep(self.read_delay)
        data = await asyncio.get_running_loop().sock_recv(self.sock, self.read_size)
        if not data:
            raise EOFError("the server closed the connection")
        self.buf += data

    async def read_until(self, sep, limit=1 << 20):
        start = 0
        while True:
            i = self.buf.find(sep, start)
            if i >= 0:
                out = bytes(self.buf[: i + len(sep)])
                del self.buf[: i + len(sep)]
                return out
            if len(self.buf) > limit:
                raise ClientError(f"no {sep!r} within {limit} bytes")
            start = max(0, len(self.buf) - len(sep) + 1)
            await self._fill()

    async def read_exactly(self, n):
        while len(self.buf) < n:
            await self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    async def read_eof(self):
        while True:
            try:
                await self._fill()
            except EOFError:
                out = bytes(self.buf)
                self.buf.clear()
                return out

    def close(self, reset=False):
        if self.closed:
            return
        self.closed = True
        if reset:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        self.sock.close()
        if self.counted:
            self.soak.open_sockets -= 1


# --------------------------------------------------------------------------- HTTP


def http_post(host, path, body, request_id):
    data = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"X-Request-Id: {request_id}\r\nContent-Length: {len(data)}\r\n\r\n")
    return head.encode() + data


async def read_head(conn):
    raw = await conn.read_until(b"\r\n\r\n", 65536)
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ClientError(f"bad status line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return int(parts[1]), headers


async def body_pieces(conn, headers):
    """Yields the body of one response as it arrives (chunked or Content-Length)."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            line = await conn.read_until(b"\r\n", 4096)
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                while (await conn.read_until(b"\r\n", 65536)) != b"\r\n":
                    pass  # trailers
                return
            data = await conn.read_exactly(size + 2)
            if data[-2:] != b"\r\n":
                raise ClientError("chunk not followed by CRLF")
            yield data[:-2]
    elif "content-length" in headers:
        yield await conn.read_exactly(int(headers["content-length"]))
    else:
        yield await conn.read_eof()


class SSEParser:
    def __init__(self):
        self.buf = b""

    def feed(self, data):
        self.buf += data.replace(b"\r\n", b"\n")
        events = []
        while b"\n\n" in self.buf:
            raw, self.buf = self.buf.split(b"\n\n", 1)
            lines = [line[5:].lstrip() for line in raw.split(b"\n") if line.startswith(b"data:")]
            if lines:
                events.append(b"\n".join(lines).decode())
        return events


# --------------------------------------------------------------------------- answer checks


class Answer:
    """One streamed answer: its chunks, checked as they come and at the end."""

    def __init__(self, soak, label, max_tokens, prompt_tokens, t_sent, ws_id=None, record=False):
        self.soak, self.label = soak, label
        self.max_tokens, self.prompt_tokens = max_tokens, prompt_tokens
        self.t_sent, self.t_first, self.t_last = t_sent, None, None
        self.ws_id = ws_id
        self.record = record  # feeds the TTFT and per-token figures
        self.completion_id = None
        self.tokens = 0
        self.finish = []
        self.usage = None
        self.chunks = 0

    def chunk(self, obj, now):
        if "error" in obj:
            raise ClientError(f"{self.label}: error chunk {json.dumps(obj)[:200]}")
        cid = obj.get("id")
        if self.ws_id is not None:
            if cid != self.ws_id:
                raise ClientError(f"{self.label}: chunk id {cid!r} is not the call's {self.ws_id!r}")
        elif self.completion_id is None:
            self.completion_id = cid
        elif cid != self.completion_id:
            raise ClientError(f"{self.label}: chunk id changed from {self.completion_id} to {cid}")
        if self.usage is not None:
            raise ClientError(f"{self.label}: a chunk after the usage chunk")
        self.chunks += 1
        for choice in obj.get("choices", []):
            if choice.get("index", 0) != 0:
                raise ClientError(f"{self.label}: choice index {choice.get('index')}")
            if self.finish:
                raise ClientError(f"{self.label}: tokens after finish_reason")
            lp = choice.get("logprobs") or {}
            n = len(lp.get("tokens") or [])
            if n:
                if self.t_first is None:
                    self.t_first = now
                self.t_last = now
                self.tokens += n
            if choice.get("finish_reason") is not None:
                self.finish.append(choice["finish_reason"])
        if obj.get("usage") is not None:
            self.usage = obj["usage"]

    def verify(self):
        """The complete answer's checks (after [DONE] or the "done" message)."""
        problems = []
        if self.tokens != self.max_tokens:
            problems.append(f"{self.tokens} tokens streamed, max_tokens {self.max_tokens}")
        if self.finish != ["length"]:
            problems.append(f"finish_reason {self.finish}, expected ['length']")
        u = self.usage
        if u is None:
            problems.append("no usage chunk")
        elif (u.get("completion_tokens") != self.tokens or u.get("prompt_tokens") != self.prompt_tokens
              or u.get("total_tokens") != self.tokens + self.prompt_tokens):
            problems.append(f"usage {u} against {self.prompt_tokens} prompt and {self.tokens} streamed tokens")
        if problems:
            raise ClientError(f"{self.label}: " + "; ".join(problems))
        if self.completion_id is not None:
            self.soak.note_completion_id(self.completion_id, self.label)
        if self.record and self.t_first is not None:
            self.soak.ttft.append((time.monotonic(), self.t_first - self.t_sent))
            if self.tokens > 1:
                self.soak.tpot.append((time.monotonic(), (self.t_last - self.t_first) / (self.tokens - 1)))


def check_full_response(soak, label, status, headers, body, max_tokens, prompt_tokens):
    if status != 200:
        raise ClientError(f"{label}: status {status}: {body[:200]!r}")
    try:
        obj = json.loads(body)
    except ValueError:
        raise ClientError(f"{label}: body is not JSON: {body[:200]!r}")
    choices = obj.get("choices") or []
    if len(choices) != 1:
        raise ClientError(f"{label}: {len(choices)} choices")
    c = choices[0]
    n = len((c.get("logprobs") or {}).get("tokens") or [])
    u = obj.get("usage") or {}
    if (n != max_tokens or c.get("finish_reason") != "length" or u.get("completion_tokens") != n
            or u.get("prompt_tokens") != prompt_tokens or u.get("total_tokens") != n + prompt_tokens):
        raise ClientError(f"{label}: {n} tokens, finish {c.get('finish_reason')}, usage {u}; "
                          f"expected {max_tokens} tokens after {prompt_tokens}")
    soak.note_completion_id(obj.get("id"), label)


# --------------------------------------------------------------------------- WebSocket


class WebSocket:
    def __init__(self, conn):
        self.conn = conn

    @classmethod
    async def connect(cls, soak):
        conn = await Conn.open(soak)
        key = base64.b64encode(os.urandom(16)).decode()
        await conn.send((f"GET /v1/ws HTTP/1.1\r\nHost: {soak.host}:{soak.port}\r\nUpgrade: websocket\r\n"
                         f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                         f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
        status, headers = await read_head(conn)
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                                               .encode()).digest()).decode()
        if status != 101 or headers.get("sec-websocket-accept") != accept:
            conn.close()
            raise ClientError(f"ws: upgrade answered {status}, accept {headers.get('sec-websocket-accept')}")
        return cls(conn)

    async def send_frame(self, opcode, payload):
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
        await self.conn.send(head + mask + masked)

    async def send_json(self, obj):
        await self.send_frame(0x1, json.dumps(obj).encode())

    async def recv(self):
        """The next text message (str), or None on a close frame."""
        parts = []
        while True:
            b0, b1 = await self.conn.read_exactly(2)
            opcode, fin = b0 & 0x0F, b0 & 0x80
            if b1 & 0x80:
                raise ClientError("ws: a masked frame from the server")
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", await self.conn.read_exactly(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", await self.conn.read_exactly(8))[0]
            payload = await self.conn.read_exactly(n)
            if opcode == 0x9:
                await self.send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode == 0x8:
                return None
            if opcode not in (0x0, 0x1):
                raise ClientError(f"ws: unexpected opcode {opcode}")
            parts.append(payload)
            if fin:
                return b"".join(parts).decode()

    async def close(self):
        try:
            await self.send_frame(0x8, struct.pack(">H", 1000))
            while await asyncio.wait_for(self.recv(), 10) is not None:
                pass
        except (EOFError, OSError, asyncio.TimeoutError, ClientError):
            pass
        self.conn.close()


# --------------------------------------------------------------------------- the soak


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def parse_metrics(text):
    m = {"running": 0.0, "waiting": 0.0, "swapped": 0.0, "gpu_blocks": 0, "cpu_blocks": 0,
         "free": {"device": 0.0, "cpu": 0.0}, "cached": {"device": 0.0, "cpu": 0.0},
         "success": {}, "generation_tokens": 0.0}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.match(r"actorllm:([a-zA-Z_]+)(?:\{(.*)\})? (\S+)$", line)
        if not match:
            continue
        name, labels_text, value = match.group(1), match.group(2) or "", float(match.group(3))
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels_text))
        if name == "num_requests_running":
            m["running"] += value
        elif name == "num_requests_waiting":
            m["waiting"] += value
        elif name == "num_requests_swapped":
            m["swapped"] += value
        elif name in ("num_free_blocks", "num_cached_blocks"):
            key = "free" if name == "num_free_blocks" else "cached"
            m[key][labels.get("pool", "device")] = m[key].get(labels.get("pool", "device"), 0) + value
        elif name == "cache_config_info":
            m["gpu_blocks"] += int(labels.get("num_gpu_blocks", 0))
            m["cpu_blocks"] += int(labels.get("num_cpu_blocks", 0))
        elif name == "request_success_total":
            r = labels.get("finished_reason", "?")
            m["success"][r] = m["success"].get(r, 0) + value
        elif name == "generation_tokens_total":
            m["generation_tokens"] += value
    m["kv_used"] = int(m["gpu_blocks"] - m["free"]["device"] - m["cached"]["device"])
    m["cpu_kv_used"] = int(m["cpu_blocks"] - m["free"]["cpu"] - m["cached"]["cpu"])
    return m


class Soak:
    def __init__(self, args):
        self.args = args
        self.host, self.port = args.host, args.port
        self.rng = random.Random(args.seed)
        self.open_sockets = 0
        self.failures = []          # reasons (strings), all of them
        self.completion_ids = {}    # completion id -> label of its first answer
        self.duplicates = 0         # answers whose completion id an earlier answer had
        self.abandoned = 0          # requests open in a client when it failed (reported there)
        self.outstanding = {}       # X-Request-Id / ws id -> kind, while a request runs
        self.submitted = 0          # requests the engine must have seen
        self.interrupted = 0        # of those, ones the clients cut short (may end as abort)
        self.finished = []          # (time, kind, outcome) per request that ended
        self.ttft, self.tpot = [], []
        self.iterations = {k: 0 for k in KINDS}
        self.outcomes = {}
        self.samples = []
        self.seq = 0
        self.t0 = None
        self.stop_at = None
        self.stopping = asyncio.Event()
        self.server_dead = False

    # ------------------------------------------------------------ bookkeeping

    def fail(self, reason):
        self.failures.append(reason)
        if len(self.failures) <= 20:
            print(f"FAIL {self.elapsed():7.1f}s {reason}", file=sys.stderr, flush=True)

    def elapsed(self):
        return time.monotonic() - self.t0 if self.t0 else 0.0

    def running(self):
        return not self.stopping.is_set() and time.monotonic() < self.stop_at

    def new_id(self, kind, client):
        self.seq += 1
        return f"soak-{kind}-{client}-{self.seq}"

    def start(self, rid, kind, client):
        if rid in self.outstanding:
            self.fail(f"request id {rid} reused by the client")
        self.outstanding[rid] = (kind, client)
        self.submitted += 1

    def end(self, rid, outcome, interrupted=False):
        entry = self.outstanding.pop(rid, None)
        if entry is None:
            self.fail(f"{rid}: ended twice or never started ({outcome})")
            return
        kind = entry[0]
        if interrupted:
            self.interrupted += 1
        self.finished.append((time.monotonic(), kind, outcome))
        key = f"{kind}:{outcome}"
        self.outcomes[key] = self.outcomes.get(key, 0) + 1

    def note_completion_id(self, cid, label):
        if not cid:
            raise ClientError(f"{label}: answer without an id")
        if cid in self.completion_ids:
            self.duplicates += 1
            raise ClientError(f"{label}: completion id {cid} duplicated (first seen in "
                              f"{self.completion_ids[cid]})")
        self.completion_ids[cid] = label

    def pick_prompt(self, max_out=None, reserve=None):
        prompt, count = self.rng.choice(self.prompts)
        hi = max_out or self.args.max_tokens
        hi = max(1, min(hi, self.max_model_len - count - 1))
        lo = min(self.args.min_tokens, hi)
        return prompt, count, self.rng.randint(lo, hi)

    def body(self, prompt, max_tokens, stream):
        b = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True,
             "logprobs": 0, "stream": stream}
        if stream:
            b["stream_options"] = {"include_usage": True}
        return b

    async def sleep_or_stop(self, seconds):
        try:
            await asyncio.wait_for(self.stopping.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    # ------------------------------------------------------------ HTTP helpers

    async def one_stream(self, conn, kind, client, label_extra=""):
        """Sends a streaming request on conn and reads and checks the whole answer; returns
        whether the server keeps the connection open."""
        rid = self.new_id(kind, client)
        prompt, ptoks, max_tokens = self.pick_prompt()
        self.start(rid, kind, client)
        t_sent = time.monotonic()
        await conn.send(http_post(self.host, "/v1/completions", self.body(prompt, max_tokens, True), rid))
        keep = await self.read_stream(conn, rid, kind + label_extra, max_tokens, ptoks, t_sent,
                                      record=(kind == "stream"))
        self.end(rid, "ok")
        return keep

    async def read_stream(self, conn, rid, label, max_tokens, ptoks, t_sent, record=False):
        status, headers = await read_head(conn)
        label = f"{label} {rid}"
        if headers.get("x-request-id") != rid:
            raise ClientError(f"{label}: X-Request-Id {headers.get('x-request-id')!r} answered "
                              f"(lost or reordered answer)")
        if status != 200:
            body = b"".join([p async for p in body_pieces(conn, headers)])
            raise ClientError(f"{label}: status {status}: {body[:200]!r}")
        answer = Answer(self, label, max_tokens, ptoks, t_sent, record=record)
        parser = SSEParser()
        done = 0
        async for piece in body_pieces(conn, headers):
            now = time.monotonic()
            for event in parser.feed(piece):
                if done:
                    raise ClientError(f"{label}: an event after [DONE]: {event[:100]!r}")
                if event == "[DONE]":
                    done += 1
                    continue
                answer.chunk(json.loads(event), now)
        if done != 1 or parser.buf.strip():
            raise ClientError(f"{label}: stream ended without [DONE] ({parser.buf[:100]!r} left)")
        answer.verify()
        return headers.get("connection", "").lower() != "close"

    async def read_full(self, conn, rid, label, max_tokens, ptoks):
        status, headers = await read_head(conn)
        label = f"{label} {rid}"
        if headers.get("x-request-id") != rid:
            raise ClientError(f"{label}: X-Request-Id {headers.get('x-request-id')!r} answered "
                              f"(lost or reordered answer)")
        body = b"".join([p async for p in body_pieces(conn, headers)])
        check_full_response(self, label, status, headers, body, max_tokens, ptoks)
        return headers.get("connection", "").lower() != "close"

    # ------------------------------------------------------------ client kinds

    async def client_stream(self, client):
        conn = None
        try:
            while self.running():
                conn = conn or await Conn.open(self)
                for _ in range(self.rng.randint(1, 8)):
                    if not self.running():
                        break
                    if not await self.one_stream(conn, "stream", client):
                        break
                    self.iterations["stream"] += 1
                conn.close()
                conn = None
        finally:
            if conn:
                conn.close()

    async def client_nonstream(self, client):
        conn = None
        try:
            while self.running():
                conn = conn or await Conn.open(self)
                rid = self.new_id("nonstream", client)
                prompt, ptoks, max_tokens = self.pick_prompt()
                self.start(rid, "nonstream", client)
                await conn.send(http_post(self.host, "/v1/completions",
                                          self.body(prompt, max_tokens, False), rid))
                keep = await self.read_full(conn, rid, "nonstream", max_tokens, ptoks)
                self.end(rid, "ok")
                self.iterations["nonstream"] += 1
                if not keep or self.rng.random() < 0.2:
                    conn.close()
                    conn = None
        finally:
            if conn:
                conn.close()

    async def client_disconnect(self, client):
        while self.running():
            conn = await Conn.open(self)
            try:
                rid = self.new_id("disconnect", client)
                prompt, ptoks, max_tokens = self.pick_prompt()
                max_tokens = max(max_tokens, min(self.args.max_tokens, 8))
                cut = self.rng.randint(1, max(1, max_tokens // 2))
                self.start(rid, "disconnect", client)
                await conn.send(http_post(self.host, "/v1/completions",
                                          self.body(prompt, max_tokens, True), rid))
                status, headers = await read_head(conn)
                if headers.get("x-request-id") != rid or status != 200:
                    raise ClientError(f"disconnect {rid}: status {status}, X-Request-Id "
                                      f"{headers.get('x-request-id')!r}")
                answer = Answer(self, f"disconnect {rid}", max_tokens, ptoks, time.monotonic())
                parser = SSEParser()
                async for piece in body_pieces(conn, headers):
                    for event in parser.feed(piece):
                        if event != "[DONE]":
                            answer.chunk(json.loads(event), time.monotonic())
                    if answer.tokens >= cut:
                        break
                if answer.tokens > max_tokens:
                    raise ClientError(f"disconnect {rid}: {answer.tokens} tokens > max_tokens {max_tokens}")
                conn.close(reset=self.rng.random() < 0.5)
                self.end(rid, "disconnected", interrupted=True)
                self.iterations["disconnect"] += 1
            finally:
                conn.close()

    async def client_pipeline(self, client):
        conn = None
        try:
            while self.running():
                conn = conn or await Conn.open(self)
                reqs = []
                for _ in range(2):
                    rid = self.new_id("pipeline", client)
                    prompt, ptoks, max_tokens = self.pick_prompt()
                    stream = self.rng.random() < 0.5
                    reqs.append((rid, prompt, ptoks, max_tokens, stream))
                    self.start(rid, "pipeline", client)
                wire = b"".join(http_post(self.host, "/v1/completions", self.body(p, m, s), rid)
                                for rid, p, _, m, s in reqs)
                t_sent = time.monotonic()
                await conn.send(wire)  # both requests in one write
                keep = True
                for rid, _, ptoks, max_tokens, stream in reqs:
                    if stream:
                        keep = await self.read_stream(conn, rid, "pipeline", max_tokens, ptoks, t_sent) and keep
                    else:
                        keep = await self.read_full(conn, rid, "pipeline", max_tokens, ptoks) and keep
                    self.end(rid, "ok")
                self.iterations["pipeline"] += 1
                if not keep or self.rng.random() < 0.2:
                    conn.close()
                    conn = None
        finally:
            if conn:
                conn.close()

    async def client_ws(self, client):
        while self.running():
            ws = await WebSocket.connect(self)
            try:
                rounds = self.rng.randint(1, 4)
                abrupt = self.rng.random() < 0.2
                for r in range(rounds):
                    if not self.running():
                        break
                    await self.ws_round(ws, client, abrupt and r == rounds - 1)
                    self.iterations["ws"] += 1
                if not (abrupt and ws.conn.closed):
                    await ws.close()
            finally:
                ws.conn.close()

    async def ws_round(self, ws, client, abrupt):
        """Three calls at once: each completes, is cancelled after its first chunk, or is
        cancelled right after it is sent. With abrupt, the socket is closed after the first
        chunk of any call, with the calls still running."""
        calls = {}
        for _ in range(3):
            rid = self.new_id("ws", client)
            prompt, ptoks, max_tokens = self.pick_prompt()
            action = self.rng.choices(["complete", "cancel_later", "cancel_now"], [0.5, 0.35, 0.15])[0]
            calls[rid] = {"answer": Answer(self, f"ws {rid}", max_tokens, ptoks, time.monotonic(),
                                           ws_id=rid, record=True),
                          "action": action, "cancel_sent": False, "closing": None, "ended": False}
            self.start(rid, "ws", client)
            body = self.body(prompt, max_tokens, True)
            body.pop("stream")
            body["id"] = rid
            await ws.send_json(body)
            if action == "cancel_now":
                calls[rid]["cancel_sent"] = True
                await ws.send_json({"type": "cancel", "id": rid})
        open_calls = set(calls)
        while open_calls:
            text = await ws.recv()
            if text is None:
                raise ClientError(f"ws: the server closed with calls {sorted(open_calls)} open")
            msg = json.loads(text)
            rid = msg.get("id")
            call = calls.get(rid)
            if call is None or rid not in open_calls:
                raise ClientError(f"ws: a message for an unknown or closed call: {text[:200]}")
            mtype = msg.get("type")
            if mtype is None:  # a chunk
                if call["closing"]:
                    raise ClientError(f"ws {rid}: a chunk after {call['closing']}")
                call["answer"].chunk(msg, time.monotonic())
                if abrupt:
                    ws.conn.close(reset=self.rng.random() < 0.5)
                    for other in open_calls:
                        if not calls[other]["ended"]:
                            self.end(other, "ws-closed", interrupted=True)
                    return
                if call["action"] == "cancel_later" and not call["cancel_sent"]:
                    call["cancel_sent"] = True
                    await ws.send_json({"type": "cancel", "id": rid})
                continue
            if call["closing"] == "done" and mtype == "error" and call["cancel_sent"] \
                    and "no running request" in json.dumps(msg.get("error")):
                open_calls.discard(rid)  # the cancel crossed the "done": its one answer
                continue
            if call["closing"]:
                raise ClientError(f"ws {rid}: a second closing message {mtype} after {call['closing']}")
            call["closing"] = mtype
            if mtype == "done":
                call["answer"].verify()
                call["ended"] = True
                self.end(rid, "ok")
                if not call["cancel_sent"]:
                    open_calls.discard(rid)
                # else the cancel that crossed the "done" is still to be answered (an error)
            elif mtype == "cancelled":
                if not call["cancel_sent"]:
                    raise ClientError(f"ws {rid}: cancelled without a cancel")
                call["ended"] = True
                self.end(rid, "cancelled", interrupted=True)
                open_calls.discard(rid)
            else:
                raise ClientError(f"ws {rid}: {mtype}: {text[:200]}")

    async def client_slow(self, client):
        conn = None
        try:
            while self.running():
                conn = conn or await Conn.open(self, rcvbuf=4096, read_size=256,
                                               read_delay=self.rng.uniform(0.005, 0.03))
                if not await self.one_stream(conn, "slow", client) or self.rng.random() < 0.3:
                    conn.close()
                    conn = None
                self.iterations["slow"] += 1
        finally:
            if conn:
                conn.close()

    async def client_never(self, client):
        while self.running():
            conn = await Conn.open(self, rcvbuf=4096)
            try:
                rid = self.new_id("never", client)
                prompt, ptoks, max_tokens = self.pick_prompt(max_out=self.max_model_len)
                self.start(rid, "never", client)
                await conn.send(http_post(self.host, "/v1/completions",
                                          self.body(prompt, max_tokens, True), rid))
                await self.sleep_or_stop(self.rng.uniform(1.0, self.args.never_hold))
                conn.close(reset=self.rng.random() < 0.5)
                self.end(rid, "held", interrupted=True)
                self.iterations["never"] += 1
            finally:
                conn.close()

    async def run_client(self, kind, client):
        fn = getattr(self, f"client_{kind}")
        while self.running():
            try:
                await asyncio.wait_for(fn(client), timeout=max(1.0, self.stop_at - time.monotonic())
                                       + self.args.request_timeout)
            except asyncio.TimeoutError:
                self.fail(f"{kind} client {client}: stuck for more than {self.args.request_timeout:.0f} s "
                          f"past the end of the run")
            except ClientError as e:
                self.fail(str(e))
            except (EOFError, OSError) as e:
                self.fail(f"{kind} client {client}: connection failed: {type(e).__name__}: {e}")
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a bug in an answer (JSON, types) is a failure, not a crash
                self.fail(f"{kind} client {client}: {type(e).__name__}: {e}")
            # the requests this client had open are accounted for by the failure just reported
            for rid in [r for r, (k, c) in self.outstanding.items() if k == kind and c == client]:
                del self.outstanding[rid]
                self.abandoned += 1
            if self.running():
                await asyncio.sleep(0.5)

    # ------------------------------------------------------------ sampling

    async def get(self, path, timeout=30.0):
        conn = await Conn.open(self, counted=False)
        try:
            await conn.send(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\nConnection: close\r\n\r\n".encode())

            async def read():
                status, headers = await read_head(conn)
                body = b"".join([p async for p in body_pieces(conn, headers)])
                return status, body
            return await asyncio.wait_for(read(), timeout)
        finally:
            conn.close()

    async def post_json(self, path, body):
        conn = await Conn.open(self, counted=False)
        try:
            data = json.dumps(body).encode()
            await conn.send((f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nConnection: close\r\n"
                             f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n")
                            .encode() + data)
            status, headers = await read_head(conn)
            body = b"".join([p async for p in body_pieces(conn, headers)])
            if status != 200:
                raise ClientError(f"{path}: status {status}: {body[:200]!r}")
            return json.loads(body)
        finally:
            conn.close()

    def proc(self):
        """(RSS MiB, open fds) of the server, or (None, None) without --pid."""
        if not self.args.pid:
            return None, None
        try:
            with open(f"/proc/{self.args.pid}/status") as f:
                rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024.0
            fds = len(os.listdir(f"/proc/{self.args.pid}/fd"))
            return rss, fds
        except (OSError, StopIteration):
            if not self.server_dead:
                self.server_dead = True
                self.fail(f"the server (pid {self.args.pid}) is gone")
                self.stopping.set()
            return None, None

    async def sample(self, phase):
        now = time.monotonic()
        rss, fds = self.proc()
        client_sockets = self.open_sockets
        metrics = None
        try:
            status, body = await self.get("/metrics")
            if status == 200:
                metrics = parse_metrics(body.decode())
            else:
                self.fail(f"/metrics answered {status}")
        except (OSError, EOFError, asyncio.TimeoutError, ClientError) as e:
            self.fail(f"/metrics did not answer: {type(e).__name__}: {e}")
        s = {"t": round(now - self.t0, 1), "phase": phase, "rss_mib": rss and round(rss, 1), "fds": fds,
             "client_sockets": client_sockets,
             "fds_net": None if fds is None else fds - client_sockets}
        if metrics:
            s.update({"kv_used": metrics["kv_used"], "cpu_kv_used": metrics["cpu_kv_used"],
                      "running": int(metrics["running"]), "waiting": int(metrics["waiting"]),
                      "swapped": int(metrics["swapped"]), "success": metrics["success"],
                      "generation_tokens": metrics["generation_tokens"]})
        self.samples.append(s)
        return s, metrics

    async def sampler(self):
        while not self.stopping.is_set() and time.monotonic() < self.stop_at:
            await self.sleep_or_stop(min(self.args.sample_interval, max(0.0, self.stop_at - time.monotonic())))
            if time.monotonic() < self.stop_at - 0.5 and not self.stopping.is_set():
                s, _ = await self.sample("load")
                if self.args.verbose:
                    print(f"  {s['t']:7.1f}s rss {s['rss_mib']} fds {s['fds']} kv {s.get('kv_used')} "
                          f"run {s.get('running')} wait {s.get('waiting')} done {len(self.finished)}",
                          file=sys.stderr, flush=True)

    # ------------------------------------------------------------ the run

    def mix(self):
        shares = {}
        for part in self.args.mix.split(","):
            k, v = part.split("=")
            if k not in KINDS:
                raise SystemExit(f"unknown client kind {k} (kinds: {', '.join(KINDS)})")
            shares[k] = float(v)
        total = sum(shares.values())
        c = self.args.concurrency
        counts = {k: int(c * v / total) for k, v in shares.items()}
        for k in sorted(shares, key=lambda k: c * shares[k] / total - counts[k], reverse=True):
            if sum(counts.values()) >= c:
                break
            counts[k] += 1
        for k, v in shares.items():  # every kind present at least once when possible
            if v > 0 and counts[k] == 0 and c >= len(shares):
                donor = max(counts, key=counts.get)
                counts[donor] -= 1
                counts[k] = 1
        return counts

    async def prefault(self):
        """Before the clock starts, passes every block of the device KV pool through a request
        once: the pool hands out free blocks first-in first-out, so a block's pages are first
        touched when the allocation cursor reaches it, and until the whole pool has been used
        RSS climbs by the pool's first touches, not by leaks. Requests of distinct random
        token ids (no prefix-cache hits) as long as the context allows, max_tokens 1, four at
        a time; skipped (with a note) for pools over --prefault-blocks."""
        status, body = await self.get("/metrics")
        text = body.decode()
        m = parse_metrics(text)
        sizes = re.findall(r'cache_config_info\{[^}]*block_size="(\d+)"', text)
        block_size = int(sizes[0]) if sizes else 16
        if m["gpu_blocks"] > self.args.prefault_blocks:
            print(f"soak: no prefault: the pool has {m['gpu_blocks']} blocks (over --prefault-blocks "
                  f"{self.args.prefault_blocks}); RSS grows with first touches of the pool",
                  file=sys.stderr, flush=True)
            return
        length = max(1, min(self.max_model_len - 2, 2048))
        n = -(-int(m["gpu_blocks"] * block_size * 1.1) // length)
        t = time.monotonic()
        queue = list(range(n))

        async def worker():
            conn = None
            try:
                while queue:
                    i = queue.pop()
                    conn = conn or await Conn.open(self, counted=False)
                    ids = [self.rng.randrange(3, 500) for _ in range(length)]
                    await conn.send(http_post(self.host, "/v1/completions",
                                              {"model": self.model, "prompt": ids, "max_tokens": 1},
                                              f"soak-prefault-{i}"))
                    status, headers = await read_head(conn)
                    body = b"".join([p async for p in body_pieces(conn, headers)])
                    if status != 200:
                        raise ClientError(f"prefault request: status {status}: {body[:200]!r}")
                    if headers.get("connection", "").lower() == "close":
                        conn.close()
                        conn = None
            finally:
                if conn:
                    conn.close()
        await asyncio.wait_for(asyncio.gather(*[worker() for _ in range(4)]), 900)
        for _ in range(60):  # the gauges settle after the last answer's step
            _, body = await self.get("/metrics")
            m = parse_metrics(body.decode())
            if m["running"] == 0 and m["waiting"] == 0 and m["kv_used"] == 0:
                break
            await asyncio.sleep(0.5)
        print(f"soak: prefault: {n} requests of {length} tokens through {m['gpu_blocks']} blocks "
              f"in {time.monotonic() - t:.1f} s", file=sys.stderr, flush=True)

    async def run(self):
        a = self.args
        self.t0 = time.monotonic()
        status, body = await self.get("/v1/models")
        models = json.loads(body)["data"]
        self.model = a.model or models[0]["id"]
        self.prompts = []
        for p in PROMPTS:
            t = await self.post_json("/tokenize", {"model": self.model, "prompt": p})
            self.prompts.append((p, t["count"]))
            self.max_model_len = t["max_model_len"]
        counts = self.mix()
        duration = a.minutes * 60.0
        print(f"soak: {duration:.0f} s at concurrency {a.concurrency} on {self.model} "
              f"(max_model_len {self.max_model_len}); clients "
              + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr, flush=True)
        if a.prefault_blocks:
            await self.prefault()
        base_sample, base = await self.sample("start")
        if base is None:
            raise SystemExit("no /metrics at the start")
        self.t0 = time.monotonic()
        self.samples[-1]["t"] = 0.0
        self.stop_at = self.t0 + duration
        tasks = [asyncio.ensure_future(self.run_client(k, i)) for k, n in counts.items() for i in range(n)]
        await self.sampler()
        self.stopping.set()  # clients finish their current request and stop
        done, pending = await asyncio.wait(tasks, timeout=a.request_timeout + 10)
        if pending:
            self.fail(f"{len(pending)} clients still busy {a.request_timeout + 10:.0f} s after the run")
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        drained_at = time.monotonic()
        await asyncio.sleep(a.idle)
        end, m = None, None
        deadline = time.monotonic() + 30
        while True:
            if self.server_dead:
                break
            end, m = await self.sample("idle")
            if m and m["running"] == 0 and m["waiting"] == 0 and m["kv_used"] == 0 and m["swapped"] == 0:
                break
            if time.monotonic() > deadline:
                break
            self.samples.pop()
            await asyncio.sleep(1)
        health = None
        if not self.server_dead:
            try:
                health = (await self.get("/health", 10))[0]
            except (OSError, EOFError, asyncio.TimeoutError, ClientError) as e:
                health = f"{type(e).__name__}: {e}"
        return self.verdict(base, m, end, duration, health, drained_at)

    def verdict(self, base, m, end, duration, health, drained_at):
        a = self.args
        checks = []

        def check(name, ok, detail):
            checks.append({"check": name, "ok": bool(ok), "detail": detail})

        check("server up", not self.server_dead and health == 200, f"/health {health}")
        check("clients saw no error", not self.failures, f"{len(self.failures)} failures")
        check("no lost request", not self.outstanding,
              f"{len(self.outstanding)} requests never ended"
              + (f" (e.g. {sorted(self.outstanding)[:5]})" if self.outstanding else ""))
        check("no duplicated answer", self.duplicates == 0,
              f"{len(self.completion_ids)} distinct completion ids, {self.duplicates} duplicated")
        ran = [k for k, n in self.iterations.items() if n == 0 and self.mix().get(k, 0) > 0]
        check("every client kind ran", not ran, f"iterations {self.iterations}")
        if m:
            d_total = sum(m["success"].values()) - sum(base["success"].values())
            d_abort = m["success"].get("abort", 0) - base["success"].get("abort", 0)
            d_error = m["success"].get("error", 0) - base["success"].get("error", 0)
            check("server finished each request once", d_total == self.submitted,
                  f"request_success_total +{d_total:.0f}, clients submitted {self.submitted}")
            check("aborts only for interrupted requests", d_abort <= self.interrupted,
                  f"abort +{d_abort:.0f}, interrupted {self.interrupted}")
            check("no engine errors", d_error == 0, f"error +{d_error:.0f}")
            check("KV blocks back to 0", m["kv_used"] == 0 and m["cpu_kv_used"] == 0,
                  f"device {m['kv_used']} of {m['gpu_blocks']}, cpu {m['cpu_kv_used']} of {m['cpu_blocks']} in use")
            check("queues empty", m["running"] == 0 and m["waiting"] == 0 and m["swapped"] == 0,
                  f"running {m['running']:.0f}, waiting {m['waiting']:.0f}, swapped {m['swapped']:.0f}")
        else:
            check("final /metrics", False, "no metrics after the run")
        growth = {}
        if a.pid:
            warm = a.warmup * duration
            ref_window = [s for s in self.samples if s["phase"] == "load" and 0.75 * warm <= s["t"] <= warm]
            if not ref_window:  # a short run: the first sample under load is the reference
                ref_window = [s for s in self.samples if s["phase"] == "load"][:1]
            ref_end = max((s["t"] for s in ref_window), default=warm)
            after = [s for s in self.samples if s["t"] > max(warm, ref_end) and s["rss_mib"] is not None]
            if ref_window and after:
                rss_ref = max(s["rss_mib"] for s in ref_window)
                fd_ref = max(s["fds_net"] for s in ref_window)
                rss_max = max(s["rss_mib"] for s in after)
                fd_max = max(s["fds_net"] for s in after)
                rss_limit = rss_ref * (1 + a.rss_tolerance)
                fd_limit = fd_ref + a.fd_tolerance
                load = [s for s in after if s["phase"] == "load"]
                slope = None
                if len(load) >= 3:
                    ts = [s["t"] for s in load]
                    rs = [s["rss_mib"] for s in load]
                    mt, mr = statistics.fmean(ts), statistics.fmean(rs)
                    den = sum((t - mt) ** 2 for t in ts)
                    slope = 60 * sum((t - mt) * (r - mr) for t, r in zip(ts, rs)) / den if den else 0.0
                growth = {"warmup_s": warm, "rss_ref_mib": rss_ref, "rss_max_after_mib": rss_max,
                          "rss_limit_mib": round(rss_limit, 1), "rss_slope_mib_per_min": slope and round(slope, 2),
                          "fds_net_ref": fd_ref, "fds_net_max_after": fd_max, "fds_limit": fd_limit,
                          "rss_idle_end_mib": end and end["rss_mib"], "fds_idle_end": end and end["fds"]}
                check("RSS growth after warm-up", rss_max <= rss_limit,
                      f"max {rss_max:.1f} MiB after warm-up, reference {rss_ref:.1f}, limit {rss_limit:.1f}"
                      + (f", slope {slope:+.2f} MiB/min under load" if slope is not None else ""))
                check("fd growth after warm-up", fd_max <= fd_limit,
                      f"max {fd_max} fds (less client sockets) after warm-up, reference {fd_ref}, limit {fd_limit}")
            else:
                check("growth samples", False, "too few samples for the growth checks (run longer)")
        ok = all(c["ok"] for c in checks)
        finished_ok = sum(1 for _, _, o in self.finished if o == "ok")
        summary = {
            "verdict": "PASS" if ok else "FAIL",
            "config": {"minutes": a.minutes, "concurrency": a.concurrency, "model": self.model,
                       "clients": self.mix(), "max_tokens": [a.min_tokens, a.max_tokens],
                       "warmup": a.warmup, "rss_tolerance": a.rss_tolerance, "fd_tolerance": a.fd_tolerance,
                       "pid": a.pid},
            "checks": checks,
            "failures": self.failures[:50],
            "num_failures": len(self.failures),
            "requests": {"submitted": self.submitted, "finished": len(self.finished),
                         "checked_ok": finished_ok, "interrupted": self.interrupted,
                         "abandoned_by_failed_clients": self.abandoned,
                         "outcomes": self.outcomes, "req_per_s": round(len(self.finished) / duration, 2)},
            "latency_ms": {
                "ttft_p50": ms(percentile([v for _, v in self.ttft], 0.5)),
                "ttft_p99": ms(percentile([v for _, v in self.ttft], 0.99)),
                "per_token_p50": ms(percentile([v for _, v in self.tpot], 0.5)),
                "per_token_p99": ms(percentile([v for _, v in self.tpot], 0.99))},
            "growth": growth,
            "server_success_delta": m and {k: m["success"].get(k, 0) - base["success"].get(k, 0) for k in m["success"]},
        }
        return summary

    def table(self, duration):
        every = self.args.table_every or max(self.args.sample_interval, duration / 20)
        rows = []
        last_t = None
        next_t = 0.0
        for s in self.samples:
            if s["phase"] == "load" and s["t"] + 1e-6 < next_t:
                continue
            rows.append(s)
            if s["phase"] == "load":
                next_t = s["t"] + every
        lines = ["| t s | RSS MiB | fds | KV used | running | waiting | req/s | TTFT p50 ms | TTFT p99 ms | per-token p50 ms |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        for s in rows:
            lo = last_t if last_t is not None else 0.0
            hi = s["t"]
            t_lo, t_hi = self.t0 + lo, self.t0 + hi
            n = sum(1 for t, _, _ in self.finished if t_lo < t <= t_hi)
            rate = n / (hi - lo) if hi > lo else 0.0
            tt = [v for t, v in self.ttft if t_lo < t <= t_hi]
            tp = [v for t, v in self.tpot if t_lo < t <= t_hi]
            label = {"start": " (start)", "idle": " (idle end)"}.get(s["phase"], "")
            if s["phase"] == "idle":
                rate, tt, tp = 0.0, [], []
            lines.append(f"| {s['t']:.0f}{label} | {fmt(s['rss_mib'], 1)} | {fmt(s['fds'])} | "
                         f"{fmt(s.get('kv_used'))} | {fmt(s.get('running'))} | {fmt(s.get('waiting'))} | "
                         f"{rate:.1f} | {fmt(ms(percentile(tt, 0.5)))} | {fmt(ms(percentile(tt, 0.99)))} | "
                         f"{fmt(ms(percentile(tp, 0.5)), 1)} |")
            last_t = s["t"]
        return "\n".join(lines)


def ms(v):
    return None if v is None else round(v * 1000, 1)


def fmt(v, digits=0):
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--pid", type=int, default=0, help="the server's pid, for RSS and fds (/proc)")
    p.add_argument("--model", default=None, help="model name (default: the first of /v1/models)")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--mix", default=DEFAULT_MIX, help=f"client shares (default {DEFAULT_MIX})")
    p.add_argument("--min-tokens", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--never-hold", type=float, default=40.0,
                   help="never-readers hold their socket up to this many seconds (default 40)")
    p.add_argument("--sample-interval", type=float, default=0.0,
                   help="seconds between samples (default 5, or the run / 12 when that is less)")
    p.add_argument("--table-every", type=float, default=0.0,
                   help="seconds between table rows (default: the run / 20)")
    p.add_argument("--warmup", type=float, default=0.2, help="share of the run that is warm-up")
    p.add_argument("--rss-tolerance", type=float, default=0.10)
    p.add_argument("--fd-tolerance", type=int, default=16)
    p.add_argument("--idle", type=float, default=5.0, help="idle pause before the final checks")
    p.add_argument("--request-timeout", type=float, default=180.0,
                   help="how long a client may still be busy after the end of the run")
    p.add_argument("--prefault-blocks", type=int, default=16384,
                   help="pass every block of a KV pool of at most this many blocks through a "
                        "request before the run (0: never; default 16384)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json-out", default=None, help="also write the summary with every sample here")
    p.add_argument("--verbose", action="store_true", help="print each sample as it is taken")
    args = p.parse_args()
    if args.sample_interval <= 0:
        args.sample_interval = min(5.0, args.minutes * 60.0 / 12)
    soak = Soak(args)
    summary = asyncio.run(soak.run())
    duration = args.minutes * 60.0
    print(soak.table(duration))
    print()
    print(json.dumps(summary, indent=1))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(dict(summary, samples=soak.samples, all_failures=soak.failures), f, indent=1)
    print()
    for c in summary["checks"]:
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['detail']}")
    print(f"soak verdict: {summary['verdict']}")
    return 0 if summary["verdict"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
