// Tool calls over the WebSocket (/v1/ws): a chat call with a named function streams the same
// tool-call deltas as SSE, and they fold into one call whose arguments match the schema.
//   node ws_tool_calls.mjs WS_URL
import WebSocket from 'ws';

const [url] = process.argv.slice(2);
const ws = new WebSocket(url);
const calls = [];
let end = null;
const timer = setTimeout(() => { console.log('FAIL ws tools: finished within 60 s'); process.exit(1); }, 60_000);
ws.on('open', () => {
  ws.send(JSON.stringify({
    id: 't', messages: [{role: 'user', content: 'Weather?'}], max_tokens: 200, temperature: 1, seed: 9,
    tools: [{type: 'function', function: {name: 'get_weather', parameters: {
      type: 'object', properties: {city: {enum: ['Paris', 'Rome']}}, required: ['city'],
      additionalProperties: false}}}],
    tool_choice: {type: 'function', function: {name: 'get_weather'}},
  }));
});
ws.on('message', (data) => {
  const m = JSON.parse(data.toString());
  if (m.type) end = m;
  for (const c of m.choices ?? []) {
    for (const d of c.delta?.tool_calls ?? []) {
      calls[d.index] ??= {name: '', arguments: ''};
      calls[d.index].name += d.function?.name ?? '';
      calls[d.index].arguments += d.function?.arguments ?? '';
    }
  }
  if (!end) return;
  clearTimeout(timer);
  let ok = end.type === 'done' && calls.length === 1 && calls[0].name === 'get_weather';
  try {
    const args = JSON.parse(calls[0].arguments);
    ok = ok && ['Paris', 'Rome'].includes(args.city) && Object.keys(args).length === 1;
  } catch { ok = false; }
  console.log(`${ok ? 'ok  ' : 'FAIL'} ws tools: a named function's call streams over the socket` +
              (ok ? '' : `\n     ${JSON.stringify({end, calls})}`));
  ws.close();
  process.exit(ok ? 0 : 1);
});
ws.on('error', (e) => { console.log(`FAIL ws tools: ${e}`); process.exit(1); });
