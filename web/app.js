// The playground's entry point: the tabs, the API-key form, the model name, and the chat
// mode the model supports (raw completion when it has no chat template).

import {apiFetch, apiKey, forgetApiKey, getJson, setKeyPrompt} from './api.js';
import {ChatView} from './chat.js';
import {EngineView} from './engine.js';

const $ = (selector) => document.querySelector(selector);

const chat = new ChatView($('#view-chat'));
const engine = new EngineView($('#view-engine'));

// --- tabs (WAI-ARIA tabs: arrows, Home and End move between them) -----------------------

const tabs = [...document.querySelectorAll('[role="tab"]')];

function selectTab(tab, focus = false) {
  for (const other of tabs) {
    const selected = other === tab;
    other.setAttribute('aria-selected', String(selected));
    other.tabIndex = selected ? 0 : -1;
    document.getElementById(other.getAttribute('aria-controls')).hidden = !selected;
  }
  if (focus) tab.focus();
  engine.setActive(tab.id === 'tab-engine');
  history.replaceState(null, '', tab.id === 'tab-engine' ? '#engine' : '#chat');
}

for (const tab of tabs) {
  tab.addEventListener('click', () => selectTab(tab));
  tab.addEventListener('keydown', (event) => {
    const index = tabs.indexOf(tab);
    const next = {ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1}[event.key];
    if (next === undefined) return;
    event.preventDefault();
    selectTab(tabs[(next + tabs.length) % tabs.length], true);
  });
}

// --- the API key -------------------------------------------------------------------------

const keyDialog = $('#key-dialog');
const forgetButton = $('#forget-key');

function showForget() {
  forgetButton.hidden = !apiKey();
}

setKeyPrompt((refused) => new Promise((resolve) => {
  $('#key-reason').textContent = refused
    ? 'The server refused the saved API key (401). Enter the right one.'
    : 'This server asks for an API key (it answered 401).';
  const input = $('#key-input');
  input.value = '';
  const done = (key) => {
    keyDialog.close();
    resolve(key);
  };
  $('#key-form').onsubmit = (event) => {
    event.preventDefault();
    done(input.value.trim() || null);
  };
  $('#key-cancel').onclick = () => done(null);
  keyDialog.oncancel = (event) => { event.preventDefault(); done(null); };
  keyDialog.showModal();
  input.focus();
}), showForget);

forgetButton.addEventListener('click', () => {
  forgetApiKey();
  showForget();
});

// --- start -------------------------------------------------------------------------------

/** Whether the model renders chat messages: /tokenize with messages fails without a template. */
async function hasChatTemplate() {
  const response = await apiFetch('/tokenize', {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({messages: [{role: 'user', content: 'hi'}]}),
  });
  if (response.ok) return true;
  const message = await response.json().then((body) => body.error?.message ?? '', () => '');
  return !/chat template/i.test(message);
}

async function start() {
  showForget();
  selectTab(location.hash === '#engine' ? tabs[1] : tabs[0]);
  try {
    const models = await getJson('/v1/models');
    const name = models.data?.[0]?.id ?? '';
    $('#model-name').textContent = name || 'none';
    chat.setModel(name);
    if (!(await hasChatTemplate())) {
      chat.setRaw(true, 'This model has no chat template, so the page chose it.');
    }
  } catch (error) {
    $('#model-name').textContent = `unavailable (${error.message})`;
  }
  document.body.dataset.ready = 'true';
}

start();
