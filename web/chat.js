// The Chat view: a message list and a composer. Chat mode keeps the conversation and calls
// the chat endpoint; raw completion mode sends the prompt text alone to /v1/completions (for
// models without a chat template). Answers stream, render as Markdown, and end with a line
// of stats measured here: tokens (the server's usage, else the deltas counted), time to
// first token and tokens per second. In chat mode a message may carry images: its content is
// then the list of parts the OpenAI API takes (the images as data: URLs, then the text), and
// the history keeps them, so that every later turn sends them again.

import {streamCall} from './api.js';
import {Attachments, thumbnail} from './attachments.js';
import {renderMarkdown} from './markdown.js';

const NO_TEMPLATE = /chat template/i;
const integer = new Intl.NumberFormat('en', {maximumFractionDigits: 0});

/** "a, b,\n" -> ["a", "b", "\n"]: comma-separated stop strings, with \n and \t escapes. */
function parseStops(text) {
  return text.split(',').map((s) => s.trim().replace(/\\n/g, '\n').replace(/\\t/g, '\t'))
             .filter(Boolean);
}

/** A user message's content: the text alone, or the images' parts followed by the text's. */
function userContent(text, images) {
  if (!images.length) return text;
  return [...images.map(({url}) => ({type: 'image_url', image_url: {url}})),
          ...(text ? [{type: 'text', text}] : [])];
}

export class ChatView {
  constructor(root) {
    const $ = (id) => root.querySelector(id);
    this.list = $('#messages');
    this.form = $('#composer');
    this.input = $('#prompt');
    this.inputLabel = $('#prompt-label');
    this.sendButton = $('#send');
    this.stopButton = $('#stop');
    this.raw = $('#raw');
    this.modeNote = $('#mode-note');
    this.system = $('#system');
    this.settings = {
      temperature: $('#temperature'), top_p: $('#top-p'), max_tokens: $('#max-tokens'),
      stop: $('#stop-strings'), seed: $('#seed'),
    };
    this.model = '';
    this.history = [];    // chat mode: [{role, content}] of finished turns
    this.running = null;  // the call in flight: {stop()}
    // A message of images alone is allowed: the text is required only without one.
    this.attachments = new Attachments(root, () => { this.input.required = !this.attachments.count; });

    this.form.addEventListener('submit', (event) => { event.preventDefault(); this.send(); });
    this.input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.send();
      }
    });
    root.addEventListener('keydown', (event) => { if (event.key === 'Escape') this.stop(); });
    this.stopButton.addEventListener('click', () => this.stop());
    $('#clear').addEventListener('click', () => this.clear());
    this.raw.addEventListener('change', () => this.showMode());
    this.showMode();
  }

  setModel(name) {
    this.model = name;
  }

  /** Raw mode on or off; `reason` (optional) says why the page chose it. */
  setRaw(raw, reason = '') {
    this.raw.checked = raw;
    this.showMode(reason);
  }

  showMode(reason = '') {
    const raw = this.raw.checked;
    this.inputLabel.textContent = raw ? 'Prompt (continued by the model)' : 'Message';
    this.input.placeholder = raw ? 'Once upon a time' : 'Ask something…';
    this.system.disabled = raw;
    this.attachments.setEnabled(!raw);
    this.modeNote.textContent = raw
      ? `Raw completion mode: the prompt goes to /v1/completions as it is, with no chat template. ${reason}`
      : 'Chat mode: the conversation goes to /v1/chat/completions.';
    this.modeNote.classList.toggle('raw', raw);
  }

  clear() {
    this.stop();
    this.history = [];
    this.list.replaceChildren();
  }

  stop() {
    this.running?.stop();
  }

  sampling() {
    const body = {};
    for (const [name, input] of Object.entries(this.settings)) {
      const text = input.value.trim();
      if (!text) continue;
      body[name] = name === 'stop' ? parseStops(text) : Number(text);
    }
    if (body.stop && !body.stop.length) delete body.stop;
    return body;
  }

  /** A message of the conversation; a user's shows its `images` ([{name, url}]) as thumbnails. */
  addMessage(role, text = '', images = []) {
    const item = document.createElement('li');
    item.className = `message ${role}`;
    const who = document.createElement('div');
    who.className = 'who';
    who.textContent = role === 'user' ? 'You' : (this.model || 'model');
    const content = document.createElement('div');
    content.className = 'content';
    if (images.length) {
      const strip = document.createElement('div');
      strip.className = 'images';
      strip.append(...images.map(({name, url}) => thumbnail(url, name)));
      content.append(strip);
    }
    if (role === 'user' && text) content.append(text);
    item.append(who, content);
    this.list.append(item);
    item.scrollIntoView({block: 'end'});
    return {item, content};
  }

  async send() {
    const text = this.input.value.trim();
    if (this.running || !(text || this.attachments.count)) return;
    this.input.value = '';
    const images = this.attachments.take();
    this.addMessage('user', text, images);
    this.sendButton.disabled = true;
    this.stopButton.disabled = false;
    try {
      let outcome = await this.ask(userContent(text, images));
      if (outcome.noTemplate) {
        this.setRaw(true, 'This model has no chat template, so the page switched to it.');
        outcome = await this.ask(text);
      }
    } finally {
      this.running = null;
      this.sendButton.disabled = false;
      this.stopButton.disabled = true;
      this.input.focus();
    }
  }

  /**
   * One streamed answer to `question` (a text, or a chat message's parts); resolves with
   * {noTemplate} when chat mode is refused for a text (raw mode could not send images).
   */
  async ask(question) {
    const raw = this.raw.checked;
    const body = {...(this.model ? {model: this.model} : {}), ...this.sampling()};
    if (raw) {
      body.prompt = question;
    } else {
      const system = this.system.value.trim();
      body.messages = [...(system ? [{role: 'system', content: system}] : []), ...this.history,
                       {role: 'user', content: question}];
    }
    const {item, content} = this.addMessage('assistant');
    item.dataset.state = 'streaming';
    item.setAttribute('aria-busy', 'true');
    const stats = document.createElement('p');
    stats.className = 'stats';
    item.append(stats);

    const answer = {text: '', deltas: 0, usage: null, finish: '', start: performance.now(), first: 0, last: 0};
    let call = null;
    let stopRequested = false;  // Stop pressed before the call had started
    this.running = {stop: () => { stopRequested = true; call?.stop(); }};
    const stick = () => this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
    call = await streamCall(raw ? 'completion' : 'chat', body, {
      delta: (piece) => {
        const follow = stick();
        answer.last = performance.now();
        answer.first ||= answer.last;
        answer.deltas++;
        answer.text += piece;
        content.innerHTML = renderMarkdown(answer.text);
        if (follow) this.list.scrollTop = this.list.scrollHeight;
      },
      finish: (reason) => { answer.finish = reason; },
      usage: (usage) => { answer.usage = usage; },
    });
    if (stopRequested) call.stop();
    const result = await call.finished;
    item.setAttribute('aria-busy', 'false');

    if (result.error && !raw && typeof question === 'string' && NO_TEMPLATE.test(result.error.message ?? '') && !answer.text) {
      item.remove();
      return {noTemplate: true};
    }
    if (result.error) {
      const error = document.createElement('p');
      error.className = 'error';
      error.setAttribute('role', 'alert');
      error.textContent = `Error: ${result.error.message}`;
      content.after(error);
    }
    item.dataset.state = result.error ? 'error' : result.stopped ? 'stopped' : 'done';
    stats.textContent = this.statsLine(answer, call.transport, item.dataset.state);
    if (!raw && answer.text) {
      this.history.push({role: 'user', content: question}, {role: 'assistant', content: answer.text});
    }
    return {};
  }

  statsLine(answer, transport, state) {
    const parts = [];
    const tokens = answer.usage?.completion_tokens;
    parts.push(tokens === undefined ? `${integer.format(answer.deltas)} tokens (deltas counted)`
                                    : `${integer.format(tokens)} tokens`);
    if (answer.first) {
      parts.push(`first token ${integer.format(answer.first - answer.start)} ms`);
      const n = tokens ?? answer.deltas;
      const seconds = (answer.last - answer.first) / 1000;
      if (n > 1 && seconds > 0) parts.push(`${integer.format((n - 1) / seconds)} tok/s`);
    }
    parts.push(transport);
    if (state === 'stopped') parts.push('stopped');
    else if (answer.finish) parts.push(`finish: ${answer.finish}`);
    return parts.join(' · ');
  }
}
