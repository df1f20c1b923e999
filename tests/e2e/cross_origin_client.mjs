// Pages of other origins against `actorllm serve`, in a real browser (Debian's chromium,
// headless, driven by puppeteer-core).
//   node cross_origin_client.mjs API_PORT PAGE_PORT
// API_PORT: the server on 127.0.0.1; PAGE_PORT: a free port for this script's page server.
// Each attack runs in a page of another origin; what it learns is recorded, and the server's
// count of prompt tokens (/metrics) must not move. evil.test resolves to 127.0.0.1 in this
// browser (--host-resolver-rules): a page of http://evil.test:API_PORT is DNS rebinding, its
// requests same-origin to the browser and reaching the server with that Host.
import http from 'node:http';
import puppeteer from 'puppeteer-core';

const [apiPort, pagePort] = process.argv.slice(2);
const api = `http://127.0.0.1:${apiPort}`;
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} cross-origin: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
  return ok;
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const deadline = setTimeout(() => { check(false, 'finished within 90 s'); process.exit(1); }, 90_000);

/** The server's prompt tokens so far, as /metrics counts them. */
async function promptTokens() {
  const text = await (await fetch(`${api}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith('actorllm:prompt_tokens_total'))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

// Every attack a page can make, run in the page; each reports what the page could see.
const attacks = (target) => `
const target = ${JSON.stringify(target)};
const body = JSON.stringify({prompt: 'Once upon a time', max_tokens: 8});
const outcome = async (name, run) => {
  try { return [name, await run()]; } catch (e) { return [name, 'refused: ' + e.name]; }
};
window.results = Promise.all([
  outcome('simple POST, text body', async () =>
    (await fetch(target + '/v1/completions', {method: 'POST', mode: 'no-cors', body})).status),
  outcome('simple POST, Blob body', async () =>
    (await fetch(target + '/v1/completions', {method: 'POST', mode: 'no-cors', body: new Blob([body])})).status),
  outcome('form-encoded POST', async () =>
    (await fetch(target + '/v1/completions', {method: 'POST', mode: 'no-cors',
      headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body})).status),
  outcome('JSON POST (preflighted)', async () =>
    (await fetch(target + '/v1/chat/completions', {method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({messages: [{role: 'user', content: 'hi'}], max_tokens: 8})})).status),
  outcome('WebSocket', () => new Promise((resolve) => {
    const ws = new WebSocket(target.replace('http', 'ws') + '/v1/ws', ['actorllm']);
    let got = 'no message';
    ws.onopen = () => ws.send(JSON.stringify({id: 'x', prompt: 'Once upon a time', max_tokens: 8}));
    ws.onmessage = (m) => { got = 'message: ' + String(m.data).slice(0, 80); };
    ws.onerror = () => resolve('refused: error');
    ws.onclose = (e) => resolve(got === 'no message' ? 'refused: closed ' + e.code : got);
    setTimeout(() => resolve(got), 5000);
  })),
]).then(Object.fromEntries);
`;
const page = (target) => `<!doctype html><title>another site</title><script>${attacks(target)}</script>`;

// The other origin's pages: http://127.0.0.1:PAGE_PORT/ attacks the API on its own origin.
const pages = http.createServer((request, response) => {
  response.writeHead(200, {'Content-Type': 'text/html'});
  response.end(page(api));
});
await new Promise((resolve) => pages.listen(Number(pagePort), '127.0.0.1', resolve));

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
         '--host-resolver-rules=MAP evil.test 127.0.0.1',
         // The page of evil.test comes from the test (interception), not from a loopback
         // address: without this, chromium's own private-network checks would refuse its
         // requests before they reach the server, and the server's Host check would go
         // untested.
         '--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,' +
             'PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks'],
});

/** Opens `url` (its HTML `html` when given, served by the browser itself) and waits for the
 * page's attacks to end. */
async function attackFrom(url, html) {
  const context = await browser.createBrowserContext();
  const tab = await context.newPage();
  if (html) {
    await tab.setRequestInterception(true);
    tab.on('request', (r) => (r.isNavigationRequest() && r.url() === url
      ? r.respond({status: 200, contentType: 'text/html', body: html}) : r.continue()));
  }
  await tab.goto(url, {waitUntil: 'load'});
  const results = await tab.evaluate(() => window.results);
  await context.close();
  return results;
}

const refusedOrOpaque = (v) => v === 0 || String(v).startsWith('refused');
const before = await promptTokens();

const crossSite = await attackFrom(`http://127.0.0.1:${pagePort}/`);
for (const [name, seen] of Object.entries(crossSite))
  check(refusedOrOpaque(seen), `a page of another origin: ${name} learns nothing`, JSON.stringify(seen));

// DNS rebinding: the page is of evil.test:API_PORT, so its requests are same-origin to the
// browser and reach the server with Host evil.test: the Host allowlist answers 403.
const rebound = `http://evil.test:${apiPort}`;
const rebinding = await attackFrom(`${rebound}/attack.html`, page(rebound));
for (const [name, seen] of Object.entries(rebinding))
  check(seen === 403 || refusedOrOpaque(seen), `DNS rebinding: ${name} is refused`, JSON.stringify(seen));
check(rebinding['JSON POST (preflighted)'] === 403,
      'DNS rebinding: the same-origin JSON POST reads a 403 (host not allowed)',
      JSON.stringify(rebinding));

await sleep(500);  // a generation admitted by mistake would have counted its prompt by now
const after = await promptTokens();
check(after === before, 'no attack made the server read a prompt', `prompt tokens ${before} -> ${after}`);

// The control: the server's own origin generates, and the count sees it.
const own = await (await fetch(`${api}/v1/completions`, {method: 'POST',
  headers: {'Content-Type': 'application/json'}, body: JSON.stringify({prompt: 'Once upon a time', max_tokens: 4})})).json();
check(own.choices?.[0]?.text !== undefined, 'a request of the server\'s own client generates', JSON.stringify(own));
let counted = await promptTokens();
for (let waited = 0; counted <= after && waited < 5000; waited += 100) {
  await sleep(100);
  counted = await promptTokens();
}
check(counted > after, 'the count sees a generation (so its silence above means none ran)');

await browser.close();
pages.close();
clearTimeout(deadline);
process.exit(failures ? 1 : 0);
