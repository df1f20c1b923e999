// The server's API as the page uses it: fetch with the API key, one prompt for the key when
// a call answers 401, and streamed completions over the WebSocket (/v1/ws) or, when the
// socket cannot open, over SSE.
//
// A browser cannot put an Authorization header on a WebSocket upgrade: the key travels as the
// subprotocol "bearer.<key>" beside "actorllm", which the server answers with (a key that is
// not a valid protocol token cannot, and streams over SSE).

const KEY_STORAGE = 'actorllm.apiKey';
const SOCKET_RETRY_MS = 30_000;  // after a socket failed to open, SSE until this has passed
// `?transport=sse` in the page's address streams over SSE only (the fallback, on demand).
const SSE_ONLY = new URLSearchParams(location.search).get('transport') === 'sse';

export function apiKey() {
  return localStorage.getItem(KEY_STORAGE) ?? '';
}

export function forgetApiKey() {
  localStorage.removeItem(KEY_STORAGE);
}

let askForKey = async () => null;  // set by the page: (refused: bool) => key or null
let keySaved = () => {};
let pendingKey = null;             // one prompt at a time, shared by every waiting call

/**
 * `ask(refused)` shows the key form and resolves with the key, or null when dismissed;
 * `saved()` is called once a new key is stored.
 */
export function setKeyPrompt(ask, saved) {
  askForKey = ask;
  keySaved = saved;
}

function requestKey() {
  pendingKey ??= askForKey(apiKey() !== '').then((key) => {
    pendingKey = null;
    if (key) {
      localStorage.setItem(KEY_STORAGE, key);
      keySaved();
    }
    return key;
  });
  return pendingKey;
}

/** fetch() with `Authorization: Bearer <key>`; a 401 asks for the key and retries once. */
export async function apiFetch(path, init = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = new Headers(init.headers);
    const key = apiKey();
    if (key) headers.set('Authorization', `Bearer ${key}`);
    const response = await fetch(path, {...init, headers});
    if (response.status !== 401 || attempt === 2) return response;
    if (!(await requestKey())) return response;
  }
}

/** The error an answer carries: {status, message}. */
async function errorOf(response) {
  let message = `HTTP ${response.status}`;
  try {
    message = (await response.json()).error?.message ?? message;
  } catch { /* not JSON: keep the status */ }
  return {status: response.status, message};
}

export async function getJson(path, init) {
  const response = await apiFetch(path, init);
  if (!response.ok) throw Object.assign(new Error('request failed'), await errorOf(response));
  return response.json();
}

// --- streaming -------------------------------------------------------------------------

/** The text, finish reason and usage of one chunk (completion or chat). */
function readChunk(chunk, on) {
  for (const choice of chunk.choices ?? []) {
    const text = choice.text ?? choice.delta?.content ?? '';
    if (text) on.delta(text);
    if (choice.finish_reason) on.finish(choice.finish_reason);
  }
  if (chunk.usage) on.usage(chunk.usage);
}

// One WebSocket for every call of the page, opened when first needed.
const socket = {ws: null, key: '', opening: null, failedAt: -Infinity, calls: new Map(), nextId: 1};

function openSocket() {
  const key = apiKey();
  if (socket.ws?.readyState === WebSocket.OPEN && socket.key === key) return Promise.resolve(socket.ws);
  if (socket.ws && socket.key !== key && socket.calls.size === 0) socket.ws.close();
  socket.opening ??= new Promise((resolve, reject) => {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const url = `${scheme}://${location.host}/v1/ws`;
    const fail = () => {
      socket.opening = null;
      socket.failedAt = performance.now();
      reject(new Error('the WebSocket did not open'));
    };
    let ws;
    try {
      ws = key ? new WebSocket(url, ['actorllm', `bearer.${key}`]) : new WebSocket(url);
    } catch {  // a key that is no valid protocol token
      fail();
      return;
    }
    const timer = setTimeout(() => { ws.close(); fail(); }, 3000);
    ws.onerror = () => { clearTimeout(timer); fail(); };
    ws.onopen = () => {
      clearTimeout(timer);
      socket.ws = ws;
      socket.key = key;
      socket.opening = null;
      ws.onerror = null;
      ws.onmessage = (event) => {
        const message = JSON.parse(event.data);
        socket.calls.get(message.id)?.(message);
      };
      ws.onclose = () => {
        socket.ws = null;
        const lost = {type: 'error', error: {message: 'the WebSocket closed'}};
        for (const handle of [...socket.calls.values()]) handle(lost);
      };
      resolve(ws);
    };
  });
  return socket.opening;
}

function socketUsable() {
  return !SSE_ONLY && performance.now() - socket.failedAt > SOCKET_RETRY_MS;
}

function streamOverSocket(ws, endpoint, body, on) {
  const id = `ui-${socket.nextId++}`;
  let settle = null;
  const finished = new Promise((resolve) => { settle = resolve; });
  socket.calls.set(id, (message) => {
    if (!message.type) return readChunk(message, on);
    socket.calls.delete(id);
    if (message.type === 'error') settle({error: {status: 0, ...message.error}});
    else settle({stopped: message.type === 'cancelled'});
  });
  ws.send(JSON.stringify({id, type: endpoint === 'chat' ? 'chat' : 'completion', ...body}));
  // Stop ends the answer at once with what arrived: chunks the server had sent before it read
  // the cancel are dropped, and so is its closing message (cancelled, or done if it was first).
  const stop = () => {
    if (!socket.calls.has(id)) return;
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({type: 'cancel', id}));
    socket.calls.set(id, (message) => { if (message.type) socket.calls.delete(id); });
    settle({stopped: true});
  };
  return {transport: 'WebSocket', stop, finished};
}

function streamOverSse(endpoint, body, on) {
  const controller = new AbortController();
  const path = endpoint === 'chat' ? '/v1/chat/completions' : '/v1/completions';
  const finished = (async () => {
    try {
      const response = await apiFetch(path, {
        method: 'POST',
        headers: {'Content-Type': 'application/json'},
        body: JSON.stringify({...body, stream: true}),
        signal: controller.signal,
      });
      if (!response.ok) return {error: await errorOf(response)};
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const {value, done} = await reader.read();
        if (done) return {};
        buffer += value;
        const lines = buffer.split('\n');
        buffer = lines.pop();
        for (const line of lines) {
          // Chunks read together with the one that prompted Stop are dropped with the rest.
          if (controller.signal.aborted) return {stopped: true};
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') return {};
          const chunk = JSON.parse(data);
          if (chunk.error) return {error: {status: 0, ...chunk.error}};
          readChunk(chunk, on);
        }
      }
    } catch (error) {
      if (controller.signal.aborted) return {stopped: true};
      return {error: {status: 0, message: String(error.message ?? error)}};
    }
  })();
  return {transport: 'SSE', stop: () => controller.abort(), finished};
}

/**
 * Starts one streamed call. `endpoint` is 'chat' or 'completion'; `body` the OpenAI request
 * without `stream`; `on` = {delta(text), finish(reason), usage(usage)}. Returns
 * {transport, stop(), finished}, where `finished` resolves with {stopped} or {error}.
 */
export async function streamCall(endpoint, body, on) {
  const request = {...body, stream_options: {include_usage: true}};
  if (socketUsable()) {
    try {
      return streamOverSocket(await openSocket(), endpoint, request, on);
    } catch { /* the socket would not open: SSE below */ }
  }
  return streamOverSse(endpoint, request, on);
}
