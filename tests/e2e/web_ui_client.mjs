// The web playground in a real browser (Debian's chromium, headless, driven by puppeteer-core).
//   node web_ui_client.mjs URL KEYED_URL KEY VISION_URL IMAGES
// URL: a server without a key on stories260K, `slow` (a random model slow enough that an
// answer of 400 tokens outlasts the page's Stop) and `broken` (a folder that does not load);
// KEYED_URL: one on stories260K and `slow`, started with --api-key KEY and a chat template;
// VISION_URL: one on a random LLaVA; IMAGES: a folder with photo.png and second.png, big.png
// (above 12 MiB) and notes.txt.
// WEB_UI_SCREENSHOTS=<dir> writes chat.png (phone width) and engine.png (desktop) there.
import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const [base, keyedBase, key, visionBase, images] = process.argv.slice(2);
const screenshots = process.env.WEB_UI_SCREENSHOTS;
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} browser: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
  return ok;
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const deadline = setTimeout(() => { check(false, 'finished within 120 s'); process.exit(1); }, 120_000);

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});

/** A page in a fresh context (its own localStorage), with its uncaught errors collected. */
async function openPage(url, viewport) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (error) => page.errors.push(error.message));
  await page.setViewport(viewport);
  await page.goto(url, {waitUntil: 'load'});
  return page;
}

const lastAnswer = (page) => page.evaluate(() => {
  const item = [...document.querySelectorAll('.message.assistant')].pop();
  return item && {state: item.dataset.state, text: item.querySelector('.content').textContent,
                  stats: item.querySelector('.stats').textContent,
                  who: item.querySelector('.who').textContent};
});

/** Chooses `model` in the picker and waits until the page has checked its chat template. */
async function pickModel(page, model) {
  await page.select('#model-select', model);
  await page.waitForSelector('#model-select[aria-busy="false"]', {timeout: 10_000});
}

async function setField(page, selector, value) {
  await page.$eval(selector, (input) => { input.value = ''; });
  await page.type(selector, String(value));
}

/**
 * Sends `prompt` and waits for the answer to end. Every change of the answer's text is
 * recorded in the page (a MutationObserver), so streaming shows as a text that grew over
 * several observations. `stopOnFirstText`: the page presses Stop on the first text.
 */
async function send(page, prompt, {stopOnFirstText = false} = {}) {
  const before = await page.$$eval('.message.assistant', (items) => items.length);
  await page.evaluate((stop) => {
    window.observedLengths = [];
    const observer = window.observer = new MutationObserver(() => {
      const content = [...document.querySelectorAll('.message.assistant .content')].pop();
      const length = content?.textContent.length ?? 0;
      if (length && length !== window.observedLengths.at(-1)) window.observedLengths.push(length);
      // stories260K writes 400 tokens in about 0.1 s, faster than a round trip of the
      // driver, so the page itself clicks the button the moment text shows.
      if (stop && length) { observer.disconnect(); document.querySelector('#stop').click(); }
    });
    observer.observe(document.querySelector('#messages'), {childList: true, subtree: true, characterData: true});
  }, stopOnFirstText);
  await setField(page, '#prompt', prompt);
  await page.click('#send');
  await page.waitForFunction((n) => {
    const items = document.querySelectorAll('.message.assistant');
    return items.length > n && items[items.length - 1].dataset.state !== 'streaming';
  }, {timeout: 20_000}, before);
  const lengths = await page.evaluate(() => { window.observer.disconnect(); return window.observedLengths; });
  return {...(await lastAnswer(page)), lengths};
}

/** The engine's totals for `model` (/v1/engine/stats lists each model of the server). */
async function totalsOf(url, model, headers = {}) {
  const stats = await (await fetch(`${url}/v1/engine/stats`, {headers})).json();
  return stats.models?.find((m) => m.name === model)?.stats.totals ?? {};
}

const serverAborts = async (url, model, headers) =>
  (await totalsOf(url, model, headers)).requests_finished?.abort ?? 0;

/** Whether the server's count of aborts for `model` passes `above` within `ms`. */
async function waitForAbort(url, model, headers, above, ms = 15_000) {
  for (let waited = 0; waited < ms; waited += 100) {  // an abort lands within a step
    if (await serverAborts(url, model, headers) > above) return true;
    await sleep(100);
  }
  return false;
}

/** `clients` sending completions of 300 tokens to `model` back to back until `ms` have passed. */
async function load(url, ms, headers = {}, clients = 16, model = undefined) {
  const end = Date.now() + ms;
  const client = async () => {
    while (Date.now() < end) {
      await fetch(`${url}/v1/completions`, {
        method: 'POST', headers: {'Content-Type': 'application/json', ...headers},
        body: JSON.stringify({model, prompt: 'Once upon a time', max_tokens: 300, ignore_eos: true}),
      }).then((r) => r.text());
    }
  };
  await Promise.all(Array.from({length: clients}, client));
}

async function shoot(page, name, options = {}) {
  if (!screenshots) return;
  fs.mkdirSync(screenshots, {recursive: true});
  await page.evaluate(() => document.activeElement?.blur());
  await page.screenshot({path: path.join(screenshots, name), ...options});
}

// --- the page, chat and Stop on a server without a key (phone width) --------------------

const phone = {width: 390, height: 780, deviceScaleFactor: 2, isMobile: true, hasTouch: true};
const page = await openPage(base, phone);
await page.waitForSelector('body[data-ready="true"]', {timeout: 10_000});
check(await page.title() === 'actorllm playground', 'the page title', await page.title());
const tabs = await page.$$eval('[role="tablist"] [role="tab"]', (t) => t.map((e) => [e.textContent, e.getAttribute('aria-selected')]));
check(JSON.stringify(tabs) === '[["Chat","true"],["Engine","false"]]', 'two tabs, Chat selected', JSON.stringify(tabs));
const listed = await page.$$eval('#model-select option', (options) => options.map((o) => o.textContent));
check(JSON.stringify(listed) === '["stories260K","slow","broken (failed)"]',
      'the picker lists every model of /v1/models with its state', JSON.stringify(listed));
check(await page.$eval('#model-select', (e) => e.value) === 'stories260K', 'the first model is chosen at first');
check(await page.$eval('#raw', (e) => e.checked), 'raw completion mode chosen for a model without a chat template');
check(await page.$eval('#attach-button', (e) => e.disabled), 'no images in raw completion mode: Attach image is off');

await setField(page, '#max-tokens', 96);
await setField(page, '#temperature', 0.8);
await setField(page, '#seed', 7);
const answer = await send(page, 'Once upon a time');
check(answer.state === 'done' && answer.text.length > 20, 'a streamed completion finished', JSON.stringify(answer));
const lengths = answer.lengths;
// At least two distinct lengths, each longer than the last: the text arrived in pieces. (A
// busy machine may deliver most of the 96 tokens in one burst, so no more is asked.)
check(lengths.length >= 2 && lengths.every((n, i) => i === 0 || n > lengths[i - 1]),
      `the answer grew over ${lengths.length} observations`, JSON.stringify(lengths));
check(/^96 tokens · first token [\d,]+ ms · [\d,]+ tok\/s · WebSocket · finish: length$/.test(answer.stats),
      'the stats line: tokens from the usage, time to first token, tok/s, over the WebSocket', answer.stats);
await shoot(page, 'chat.png');

await page.click('#raw');  // chat mode on a model without a template: a 400, then raw mode
const switched = await send(page, 'Once upon a time');
check(switched.state === 'done' && await page.$eval('#raw', (e) => e.checked) &&
      /no chat template/.test(await page.$eval('#mode-note', (e) => e.textContent)),
      'a chat refused for want of a template switches to raw mode and answers', JSON.stringify(switched));

// --- the second model: named in the request, kept across a reload, and stopped ----------

await pickModel(page, 'slow');
const slowBefore = (await totalsOf(base, 'slow')).generation_tokens ?? 0;
await setField(page, '#max-tokens', 8);
const slowAnswer = await send(page, 'Once upon a time');
const slowTokens = ((await totalsOf(base, 'slow')).generation_tokens ?? 0) - slowBefore;
check(slowAnswer.state === 'done' && slowAnswer.who === 'slow' && slowTokens > 0 &&
      slowAnswer.stats.startsWith(`${slowTokens} tokens`),
      'an answer of the model chosen in the picker: the server counts its tokens under that model',
      JSON.stringify({...slowAnswer, slowTokens}));
await page.reload({waitUntil: 'load'});
await page.waitForSelector('body[data-ready="true"]', {timeout: 10_000});
check(await page.$eval('#model-select', (e) => e.value) === 'slow', 'the choice is kept across a reload');

/**
 * A long answer (400 tokens of the slow model, seconds under a load of 16 others) stopped on
 * its first text: it outlasts the page's Stop by far, so the server always has something to
 * abort. (stories260K writes 400 tokens in about 60 ms: a busy machine may deliver its first
 * chunk to the page only once the server has written them all, and then nothing is aborted.)
 */
async function stopUnderLoad(page, url, headers = {}) {
  const before = await serverAborts(url, 'slow', headers);
  await setField(page, '#max-tokens', 400);
  const loading = load(url, 1500, headers, 16, 'slow');
  await sleep(300);
  const answer = await send(page, 'Once upon a time there was a dragon', {stopOnFirstText: true});
  const text = answer.text;
  await sleep(300);  // what the server had sent before it read the cancel is dropped
  const after = await page.evaluate(() => [...document.querySelectorAll('.message.assistant .content')].pop().textContent);
  const aborted = await waitForAbort(url, 'slow', headers, before);
  await loading;
  return {answer: {...answer, grewAfterStop: after !== text}, aborted};
}

const {answer: stopped, aborted: wsAborted} = await stopUnderLoad(page, base);
check(stopped.state === 'stopped' && stopped.text.length > 0 && !stopped.grewAfterStop &&
      /WebSocket · stopped$/.test(stopped.stats),
      'Stop ends the answer and keeps what arrived', JSON.stringify(stopped));
check(wsAborted, 'the server counted the abort (/v1/engine/stats totals)');

// --- the Engine view under load (desktop width) ------------------------------------------

await page.setViewport({width: 1280, height: 900});
await page.focus('#tab-chat');
await page.keyboard.press('ArrowRight');
const selected = await page.evaluate(() => [document.activeElement.id,
  document.querySelector('#tab-engine').getAttribute('aria-selected'),
  document.querySelector('#view-engine').hidden, document.querySelector('#view-chat').hidden]);
check(JSON.stringify(selected) === '["tab-engine","true",false,true]', 'ArrowRight moves to the Engine tab', JSON.stringify(selected));
await page.waitForFunction(() => /\d/.test(document.querySelector('#total-generation-tokens').textContent),
                           {timeout: 15_000});
const generated = () => page.$eval('#total-generation-tokens', (e) => Number(e.textContent.replace(/,/g, '')));
const running = () => page.$$eval('#replica-table td.running', (cells) => cells.map((c) => Number(c.textContent)));
const loading = load(base, 4500);
await sleep(1200);
const first = await generated();
let mostRunning = 0;
for (let i = 0; i < 4; i++) {
  await sleep(600);
  mostRunning = Math.max(mostRunning, ...(await running()));
}
const second = await generated();
check(second > first, 'generated tokens grow in the Engine view under load', `${first} -> ${second}`);
check(mostRunning > 0, 'the replica table shows running requests under load', String(mostRunning));
const view = await page.evaluate(() => ({
  replicas: document.querySelectorAll('#replica-table tbody tr').length,
  state: document.querySelector('#replica-table .state')?.textContent,
  charts: document.querySelectorAll('.replica-card .chart').length,
  drawn: [...document.querySelectorAll('.replica-card polyline')].filter((l) => l.getAttribute('points')).length,
  actors: document.querySelectorAll('#actor-list li').length,
}));
check(view.replicas === 1 && view.state === 'serving' && view.charts >= 6 && view.drawn >= 6 && view.actors >= 3,
      'a serving replica, its charts drawn, and the actors listed', JSON.stringify(view));
await loading;
if (screenshots) {
  // For the README: 20 s of a load that rises and falls, so that the charts have a shape
  // (the script gives this server a small KV pool and 12 sequences a step, so requests wait
  // and are preempted).
  for (const clients of [4, 12, 24, 32]) await load(base, 4000, {}, clients);
  const last = load(base, 4000, {}, 8);
  await sleep(3000);
  await shoot(page, 'engine.png', {fullPage: true});
  await last;
}
check(page.errors.length === 0, 'no uncaught error on the page', page.errors.join('; '));

// --- a server with --api-key and a chat template: the page asks for the key once, then
// chat mode works over the WebSocket (the key as a subprotocol) and over SSE ----------------

const keyed = await openPage(keyedBase, {width: 1024, height: 768});
await keyed.waitForSelector('#key-dialog[open]', {timeout: 10_000});
check(true, 'a 401 opens the API key form');
await keyed.type('#key-input', key);
await keyed.click('#key-save');
await keyed.waitForSelector('body[data-ready="true"]', {timeout: 10_000});
check(await keyed.$eval('#model-select', (e) => e.value) === 'stories260K', 'with the key the page reads /v1/models');
check(await keyed.$eval('#forget-key', (e) => !e.hidden), 'a saved key can be forgotten (the button shows)');
check(!(await keyed.$eval('#raw', (e) => e.checked)), 'chat mode for a model with a chat template');
await setField(keyed, '#max-tokens', 32);
await setField(keyed, '#system', 'You tell stories.');
const keyedAnswer = await send(keyed, 'Tell me a story');
check(keyedAnswer.state === 'done' && keyedAnswer.text.length > 0 && /^32 tokens .*· WebSocket ·/.test(keyedAnswer.stats),
      'chat works with the key (over the WebSocket)', JSON.stringify(keyedAnswer));
const auth = {Authorization: `Bearer ${key}`};
await keyed.goto(`${keyedBase}/?transport=sse`, {waitUntil: 'load'});
await keyed.waitForSelector('body[data-ready="true"]', {timeout: 10_000});
await setField(keyed, '#max-tokens', 32);
const sseAnswer = await send(keyed, 'Tell me a story');
check(sseAnswer.state === 'done' && /^32 tokens .*· SSE ·/.test(sseAnswer.stats),
      'chat works with the key over SSE too (?transport=sse)', JSON.stringify(sseAnswer));
await pickModel(keyed, 'slow');
const {answer: keyedStop, aborted: sseAborted} = await stopUnderLoad(keyed, keyedBase, auth);
check(keyedStop.state === 'stopped' && keyedStop.text.length > 0 && !keyedStop.grewAfterStop &&
      /SSE · stopped$/.test(keyedStop.stats), 'Stop aborts an SSE answer', JSON.stringify(keyedStop));
check(sseAborted, 'the server counted the SSE abort');
await keyed.reload({waitUntil: 'load'});
await keyed.waitForSelector('body[data-ready="true"]', {timeout: 10_000});
check(!(await keyed.$('#key-dialog[open]')), 'the key is kept: no form after a reload');
check(keyed.errors.length === 0, 'no uncaught error on the keyed page', keyed.errors.join('; '));

// --- images: a random LLaVA answers about a PNG attached in the page as it answers the same
// request sent directly (over the WebSocket), and a text-only model's 400 shows (over SSE) --

const fileOf = (name, type = 'image/png') =>
  ({name, type, base64: fs.readFileSync(path.join(images, name)).toString('base64')});
const photo = fileOf('photo.png');
const photoUrl = `data:image/png;base64,${photo.base64}`;
const attached = (page) => page.$$eval('#attachments img', (imgs) => imgs.map((i) => ({alt: i.alt, src: i.src})));
const waitForAttached = (page, n) =>
  page.waitForFunction((n) => document.querySelectorAll('#attachments img').length === n, {timeout: 5000}, n);
const note = (page) => page.$eval('#attach-note', (e) => (e.checkVisibility() ? e.textContent : ''));

/** Hands `files` ([{name, type, base64}]) to the message box as a 'paste' or a 'drop'. */
async function handOver(page, kind, files) {
  await page.evaluate((kind, files) => {
    const transfer = new DataTransfer();
    for (const {name, type, base64} of files) {
      transfer.items.add(new File([Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))], name, {type}));
    }
    const init = {bubbles: true, cancelable: true};
    document.querySelector('#prompt').dispatchEvent(kind === 'paste'
      ? new ClipboardEvent('paste', {...init, clipboardData: transfer})
      : new DragEvent('drop', {...init, dataTransfer: transfer}));
  }, kind, files);
}

/** The server's answer to a chat request sent directly: {text}, or {status, message}. */
async function chatDirect(url, body, headers = {}) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: {'Content-Type': 'application/json', ...headers}, body: JSON.stringify(body),
  });
  const reply = await response.json();
  return response.ok ? {text: reply.choices[0].message.content}
                     : {status: response.status, message: reply.error?.message};
}

/** `text` as the page shows an answer: through the page's own Markdown renderer. */
const shown = (page, text) => page.evaluate(async (text) => {
  const div = document.createElement('div');
  div.innerHTML = (await import('/ui/markdown.js')).renderMarkdown(text);
  return div.textContent;
}, text);

/** The last message the user sent: its thumbnails' data: URLs and its text. */
const lastSent = (page) => page.evaluate(() => {
  const content = [...document.querySelectorAll('.message.user .content')].pop();
  return {images: [...content.querySelectorAll('img.thumb')].map((img) => img.src), text: content.textContent};
});

const vision = await openPage(visionBase, {width: 1024, height: 768});
await vision.waitForSelector('body[data-ready="true"]', {timeout: 10_000});
const visionModel = await vision.$eval('#model-select', (e) => e.value);
check(!(await vision.$eval('#raw', (e) => e.checked)) && !(await vision.$eval('#attach-button', (e) => e.disabled)),
      'chat mode for the LLaVA model, with Attach image');

const fileInput = await vision.$('#attach');
await fileInput.uploadFile(path.join(images, 'big.png'));
await vision.waitForFunction(() => document.querySelector('#attach-note').textContent, {timeout: 5000});
const bigNote = await note(vision);
check(/^big\.png is 21 MiB: images above 12 MiB are refused\.$/.test(bigNote) && !(await attached(vision)).length,
      'a file above 12 MiB is refused in the browser, with a note', bigNote);
await handOver(vision, 'drop', [fileOf('notes.txt', 'text/plain')]);
await vision.waitForFunction(() => /notes\.txt/.test(document.querySelector('#attach-note').textContent), {timeout: 5000});
check(/^notes\.txt is not a PNG, JPEG, WebP or GIF image\.$/.test(await note(vision)) && !(await attached(vision)).length,
      'a dropped file that is no image is refused, with a note', await note(vision));
await fileInput.uploadFile(path.join(images, 'photo.png'));
await waitForAttached(vision, 1);
await handOver(vision, 'paste', [fileOf('second.png')]);
await waitForAttached(vision, 2);
const both = await attached(vision);
check(both.map((t) => t.alt).join() === 'photo.png,second.png' && !(await note(vision)),
      'a picked and a pasted image show as thumbnails (and the note is gone)', JSON.stringify(both.map((t) => t.alt)));
await vision.click('#attachments button[aria-label="Remove second.png"]');
await waitForAttached(vision, 1);
const kept = await attached(vision);
check(kept[0].alt === 'photo.png' && kept[0].src === photoUrl, 'a thumbnail\'s × removes that image alone');

const question = 'What is this?';
const followUp = 'And what else?';
await setField(vision, '#max-tokens', 12);
await setField(vision, '#temperature', 0);
const imageAnswer = await send(vision, question);
const sent = await lastSent(vision);
check(sent.images.length === 1 && sent.images[0] === photoUrl && sent.text === question &&
      !(await attached(vision)).length,
      'the sent message shows its image as a thumbnail, and the composer is empty again', JSON.stringify(sent).slice(0, 200));
// What the page sends: the model, max_tokens and temperature (the other settings are empty).
const sampling = {model: visionModel, max_tokens: 12, temperature: 0};
const imageTurn = {role: 'user', content: [{type: 'image_url', image_url: {url: photoUrl}}, {type: 'text', text: question}]};
const direct = await chatDirect(visionBase, {...sampling, messages: [imageTurn]});
const blind = await chatDirect(visionBase, {...sampling, messages: [{role: 'user', content: question}]});
check(direct.text && blind.text && direct.text !== blind.text, 'the server answers differently without the image',
      JSON.stringify({direct, blind}));
check(imageAnswer.state === 'done' && imageAnswer.text && imageAnswer.text === await shown(vision, direct.text),
      'the page\'s answer is the server\'s answer for that image', JSON.stringify({page: imageAnswer.text, server: direct.text}));
const nextAnswer = await send(vision, followUp);
const next = (first) => [first, {role: 'assistant', content: direct.text}, {role: 'user', content: followUp}];
const directNext = await chatDirect(visionBase, {...sampling, messages: next(imageTurn)});
const blindNext = await chatDirect(visionBase, {...sampling, messages: next({role: 'user', content: question})});
check(nextAnswer.state === 'done' && directNext.text !== blindNext.text &&
      nextAnswer.text === await shown(vision, directNext.text),
      'the next turn sends the image again (the history keeps the parts)',
      JSON.stringify({page: nextAnswer.text, server: directNext.text, without: blindNext.text}));
check(vision.errors.length === 0, 'no uncaught error on the LLaVA page', vision.errors.join('; '));

// The keyed page (over SSE) on stories260K, chat mode with a template: an image alone, no text.
await pickModel(keyed, 'stories260K');
await setField(keyed, '#max-tokens', 8);
await (await keyed.$('#attach')).uploadFile(path.join(images, 'photo.png'));
await waitForAttached(keyed, 1);
const refusedAnswer = await send(keyed, '');
const refusal = await chatDirect(keyedBase, {model: 'stories260K', max_tokens: 8,
  messages: [{role: 'user', content: [{type: 'image_url', image_url: {url: photoUrl}}]}]}, auth);
const shownError = await keyed.evaluate(() => [...document.querySelectorAll('.message.assistant')].pop()
  .querySelector('.error[role="alert"]')?.textContent);
check(refusal.status === 400 && /takes no images/.test(refusal.message) && refusedAnswer.state === 'error' &&
      shownError === `Error: ${refusal.message}` && (await lastSent(keyed)).images[0] === photoUrl,
      'an image for a text-only model: the page shows the server\'s 400', JSON.stringify({refusal, shownError}));
check(keyed.errors.length === 0, 'no uncaught error on the keyed page with an image', keyed.errors.join('; '));

clearTimeout(deadline);
await browser.close();
process.exit(failures ? 1 : 0);
