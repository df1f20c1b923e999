// Background responses and the store's folder, through the official openai SDK, against a
// running actorllm server with --responses-store-path whose random model is slow enough (a
// 900-token answer takes a second or more) for a cancel to land while it runs.
//   node responses_store_client.mjs BASE_URL before STATE_FILE
//     a background response polled until completed; one cancelled while it runs (its engine
//     request aborted: no request left running, the KV cache empty); one still running when
//     the script ends (the server is stopped then); a plain stored response. Their ids and
//     objects go to STATE_FILE.
//   node responses_store_client.mjs BASE_URL after STATE_FILE
//     against a restarted server on the same folder: every stored response reads back as it
//     was, the running one as failed, and a conversation goes on from a stored response.
import OpenAI from 'openai';
import {readFileSync, writeFileSync} from 'node:fs';

const [base, phase, stateFile] = process.argv.slice(2);
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: 'not-needed', maxRetries: 0, timeout: 120_000});
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} store: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
}
const model = (await client.models.list()).data[0].id;
const sleep = (ms) => new Promise(r => setTimeout(r, ms));
const running = (status) => status === 'queued' || status === 'in_progress';
const long = {model, input: 'Tell a long story.', max_output_tokens: 900, temperature: 0};

async function engineStats() {
  return (await fetch(`${base}/v1/engine/stats`)).json();
}

if (phase === 'before') {
  // A background response: answered at once, then polled until it has completed (a JSON
  // schema makes the random model stop by itself).
  const schema = {type: 'object', properties: {ok: {type: 'boolean'}}, required: ['ok'],
                  additionalProperties: false};
  const queued = await client.responses.create({
    model, input: 'Is it ok?', background: true, max_output_tokens: 50,
    text: {format: {type: 'json_schema', name: 'answer', schema, strict: true}},
  });
  check(running(queued.status) && queued.background === true && queued.output.length === 0,
        'a background response is answered at once, queued', JSON.stringify(queued));
  let polled = queued;
  for (let i = 0; i < 600 && running(polled.status); i++) {
    await sleep(50);
    polled = await client.responses.retrieve(queued.id);
  }
  check(polled.status === 'completed' && typeof JSON.parse(polled.output_text).ok === 'boolean',
        'retrieve shows it completed, with its output', JSON.stringify(polled));

  // Cancelled while it runs: its engine request is aborted.
  const before = await engineStats();
  const victim = await client.responses.create({...long, background: true});
  const cancelled = await client.responses.cancel(victim.id);
  check(cancelled.status === 'cancelled', 'cancel ends a running background response', cancelled.status);
  const reread = await client.responses.retrieve(victim.id);
  check(reread.status === 'cancelled' && (reread.usage?.output_tokens ?? 0) < 900,
        'retrieve shows it cancelled, cut short', JSON.stringify({status: reread.status, usage: reread.usage}));
  // The engine's numbers follow within a step or two.
  const settled = (s) => s.totals.requests_finished.abort > before.totals.requests_finished.abort &&
                         s.replicas.every(r => r.num_waiting === 0 && r.num_running === 0 &&
                                               r.kv_cache_usage === 0);
  let stats = await engineStats();
  for (let i = 0; i < 150 && !settled(stats); i++) {
    await sleep(20);
    stats = await engineStats();
  }
  check(settled(stats), 'its engine request was aborted and its KV blocks came back',
        JSON.stringify({totals: stats.totals, replicas: stats.replicas}));

  const kept = await client.responses.create({model, input: 'Remember me', max_output_tokens: 8, temperature: 0});
  const unfinished = await client.responses.create({...long, background: true});
  writeFileSync(stateFile, JSON.stringify({
    completed: polled, cancelled: reread, kept, unfinished: unfinished.id,
  }));
} else {
  const state = JSON.parse(readFileSync(stateFile, 'utf8'));
  for (const name of ['completed', 'cancelled', 'kept']) {
    const saved = state[name];
    const back = await client.responses.retrieve(saved.id);
    check(back.status === saved.status && back.output_text === saved.output_text &&
          JSON.stringify(back.output) === JSON.stringify(saved.output),
          `after a restart the ${name} response reads back as it was`,
          JSON.stringify({saved, back}));
  }
  const items = await client.responses.inputItems.list(state.kept.id);
  check(items.data.length === 1 && items.data[0].content[0].text === 'Remember me',
        'after a restart its input items read back', JSON.stringify(items.data));
  const next = await client.responses.create({model, input: 'And now?', max_output_tokens: 4,
                                              previous_response_id: state.kept.id});
  check(next.usage.input_tokens > state.kept.usage.input_tokens,
        'after a restart a conversation goes on from a stored response', JSON.stringify(next.usage));
  const unfinished = await client.responses.retrieve(state.unfinished);
  check(unfinished.status === 'failed' && typeof unfinished.error?.message === 'string',
        'a response still running when the server stopped reads back failed', JSON.stringify(unfinished));
}

process.exit(failures ? 1 : 0);
