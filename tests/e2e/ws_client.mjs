// End-to-end checks over the WebSocket endpoint with the `ws` package.
//   node ws_client.mjs WS_URL GOLDEN_JSON      (WS_URL like ws://127.0.0.1:8000/v1/ws)
// Runs the golden completion and a chat at once on one socket, then cancels a third call.
import fs from 'node:fs';
import WebSocket from 'ws';

const [url, goldenPath] = process.argv.slice(2);
const golden = JSON.parse(fs.readFileSync(goldenPath, 'utf8'));
const headers = process.env.ACTORLLM_API_KEY ? {Authorization: `Bearer ${process.env.ACTORLLM_API_KEY}`} : {};
const ws = new WebSocket(url, {headers});
const text = {}, end = {};
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ws: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
}
const timer = setTimeout(() => { check(false, 'finished within 60 s'); process.exit(1); }, 60_000);

ws.on('open', () => {
  ws.send(JSON.stringify({id: 'golden', prompt: golden.prompt_token_ids, temperature: 0,
                          max_tokens: golden.sampling.max_tokens, ignore_eos: true}));
  ws.send(JSON.stringify({id: 'chat', messages: [{role: 'user', content: 'Hi'}],
                          max_tokens: 8, ignore_eos: true}));
  ws.send(JSON.stringify({id: 'long', prompt: 'Once', max_tokens: 400, ignore_eos: true}));
});
ws.on('message', (data) => {
  const m = JSON.parse(data.toString());
  if (m.type) {
    end[m.id] ??= m;  // a cancel that arrives after the end is answered with an error
  } else {
    for (const c of m.choices) text[m.id] = (text[m.id] ?? '') + (c.text ?? c.delta?.content ?? '');
    if (m.id === 'long' && !end.cancelSent) {
      end.cancelSent = true;
      ws.send(JSON.stringify({type: 'cancel', id: 'long'}));
    }
  }
  if (end.golden && end.chat && end.long) {
    clearTimeout(timer);
    check(end.golden.type === 'done' && text.golden === golden.output_text,
          'golden completion over the socket', JSON.stringify(text.golden));
    check(end.chat.type === 'done' && (text.chat ?? '').length > 0, 'chat over the same socket');
    // A tiny model may finish the third call before the cancel arrives; then it ends with done.
    check(end.long.type === 'cancelled' || end.long.type === 'done', 'cancel ends the third call',
          JSON.stringify(end.long));
    if (end.long.type === 'done') console.log('note ws: the third call finished before its cancel');
    ws.close();
    process.exit(failures ? 1 : 0);
  }
});
ws.on('error', (e) => { check(false, 'socket error', String(e)); process.exit(1); });
