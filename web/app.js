// The playground's entry point: the tabs, the API-key form, the model picker (every model of
// /v1/models with its state, the choice kept across reloads), and the chat mode the chosen
// model supports (raw completion when it has no chat template).

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

// --- the models --------------------------------------------------------------------------

const MODEL_STORAGE = 'actorllm.model';
const MODELS_REFRESH_MS = 5000;  // so that a model that finishes loading shows so
const picker = $('#model-select');
let models = [];  // /v1/models' data: [{id, state, error}]

const stateOf = (id) => models.find((model) => model.id === id)?.state;

/** "tiny", or "tiny (loading)" for a model that takes no requests now. */
function label(model) {
  return model.state && model.state !== 'loaded' ? `${model.id} (${model.state})` : model.id;
}

/** Whether `model` renders chat messages: /tokenize with messages fails without a template. */
async function hasChatTemplate(model) {
  const response = await apiFetch('/tokenize', {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({model, messages: [{role: 'user', content: 'hi'}]}),
  });
  if (response.ok) return true;
  const message = await response.json().then((body) => body.error?.message ?? '', () => '');
  return !/chat template/i.test(message);
}

/**
 * Chat and completions name `id` from now on, in the mode it supports; a model not loaded yet
 * is asked once a refresh finds it loaded. The picker is aria-busy while the page asks.
 */
async function useModel(id) {
  chat.setModel(id);
  picker.setAttribute('aria-busy', 'true');
  const template = stateOf(id) === 'loaded' ? await hasChatTemplate(id).catch(() => true) : null;
  if (chat.model !== id) return;  // another was chosen meanwhile
  if (template !== null) {
    chat.setRaw(!template, template ? '' : 'This model has no chat template, so the page chose it.');
  }
  picker.setAttribute('aria-busy', 'false');
}

/** Reads /v1/models into the picker; keeps the choice (else the saved one, else the first). */
async function refreshModels() {
  const wasLoaded = stateOf(chat.model) === 'loaded';
  models = (await getJson('/v1/models')).data ?? [];
  const labels = models.length ? models.map(label) : ['none'];
  if (labels.join('\n') !== [...picker.options].map((option) => option.text).join('\n')) {
    // Rebuilt only when something changed, so that a refresh does not close an open list.
    picker.replaceChildren(...labels.map((text, i) => {
      const option = new Option(text, models[i]?.id ?? '');
      option.title = models[i]?.error ?? '';  // why it failed
      return option;
    }));
  }
  const wanted = chat.model || localStorage.getItem(MODEL_STORAGE);
  const chosen = stateOf(wanted) ? wanted : models[0]?.id ?? '';
  picker.value = chosen;
  if (chosen !== chat.model || (!wasLoaded && stateOf(chosen) === 'loaded')) await useModel(chosen);
}

function refreshQuietly() {
  if (!document.hidden) refreshModels().catch(() => {});  // the last list stays on an error
}

picker.addEventListener('change', () => {
  localStorage.setItem(MODEL_STORAGE, picker.value);
  useModel(picker.value);
});
window.addEventListener('focus', refreshQuietly);

// --- start -------------------------------------------------------------------------------

async function start() {
  showForget();
  selectTab(location.hash === '#engine' ? tabs[1] : tabs[0]);
  try {
    await refreshModels();
  } catch (error) {
    picker.replaceChildren(new Option(`unavailable (${error.message})`, ''));
  }
  setInterval(refreshQuietly, MODELS_REFRESH_MS);
  document.body.dataset.ready = 'true';
}

start();
