// The Engine view: polls GET /v1/engine/stats every second while it is shown and keeps the
// last 120 samples. Rates (preemptions/s, tokens/s) are differences of the cumulative
// counters between two samples, over the server's own clock (`time`).

import {getJson} from './api.js';
import {Chart, Sparkline} from './charts.js';

const POLL_MS = 1000;
const HISTORY = 120;

const integer = new Intl.NumberFormat('en', {maximumFractionDigits: 0});
const decimal = new Intl.NumberFormat('en', {maximumFractionDigits: 1});
const percent = (v) => `${decimal.format(v * 100)} %`;
const count = (v) => integer.format(v);
const rate = (v) => `${decimal.format(v)}/s`;
const millis = (v) => `${decimal.format(v)} ms`;

/** Per-replica charts: title, series [{label, key}], options. */
const REPLICA_CHARTS = [
  ['Queues', [{label: 'waiting', key: 'waiting'}, {label: 'running', key: 'running'},
              {label: 'swapped', key: 'swapped'}], {format: count}],
  ['KV cache use', [{label: 'device pool', key: 'kv'}, {label: 'CPU pool', key: 'cpuKv'},
                    {label: 'offload tier', key: 'tierKv'}],
   {max: 1, format: percent}],
  ['Prefix cache', [{label: 'device hit rate', key: 'hitRate'},
                    {label: 'offload tier hit rate', key: 'tierHitRate'}],
   {max: 1, format: percent}],
  ['Preemptions', [{label: 'per second', key: 'preemptions'}], {format: rate}],
  ['Step time', [{label: 'per step', key: 'stepMs'}], {format: millis}],
  ['Tokens per step', [{label: 'tokens', key: 'tokensPerStep'}], {format: count}],
  ['Generation', [{label: 'tokens/s', key: 'generationRate'}], {floor: 10, format: rate}],
];

const finishedOf = (r) => (r?.stop ?? 0) + (r?.length ?? 0);

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

/** Difference per second of a cumulative counter; null for the first sample, never negative. */
function perSecond(now, before, pick) {
  if (!before || now.time <= before.time) return null;
  return Math.max(0, (pick(now) - pick(before)) / (now.time - before.time));
}

export class EngineView {
  constructor(root) {
    this.root = root;
    this.status = root.querySelector('#engine-status');
    this.replicaRows = root.querySelector('#replica-table tbody');
    this.replicaCards = root.querySelector('#replica-charts');
    this.actorList = root.querySelector('#actor-list');
    this.totalsChart = new Chart('Throughput (all replicas)',
                                 [{label: 'generation tokens/s', key: 'generationRate'},
                                  {label: 'prompt tokens/s', key: 'promptRate'}],
                                 {floor: 10, format: rate});
    root.querySelector('#totals-chart').append(this.totalsChart.root);
    this.totals = [];           // [{t, generationRate, promptRate}]
    this.replicas = new Map();  // id -> {samples, previous, card, charts}
    this.actors = new Map();    // name -> {depths, row, bar, value, sparkline}
    this.previous = null;       // the last stats object
    this.timer = null;
    this.active = false;
  }

  setActive(active) {
    this.active = active;
    if (active && !this.timer) this.poll();
  }

  async poll() {
    this.timer = null;
    if (!this.active) return;
    const started = performance.now();
    try {
      if (!document.hidden) this.ingest(await getJson('/v1/engine/stats'));
      this.status.textContent = `updated ${new Date().toLocaleTimeString()}`;
      this.status.classList.remove('error');
    } catch (error) {
      this.status.textContent = error.status === 404
        ? 'this server has no /v1/engine/stats'
        : `could not read /v1/engine/stats: ${error.message}`;
      this.status.classList.add('error');
    }
    if (this.active) this.timer = setTimeout(() => this.poll(), Math.max(0, POLL_MS - (performance.now() - started)));
  }

  ingest(stats) {
    const before = this.previous;
    this.previous = stats;
    this.renderTotals(stats, before);
    this.renderReplicas(stats);
    this.renderRouter(stats.router);
    this.renderActors(stats.actors ?? []);
  }

  /** The router's decisions by reason and the share of prompt blocks the chosen replica held. */
  renderRouter(router) {
    const list = this.root.querySelector('#router-decisions');
    const ratio = this.root.querySelector('#router-hit-ratio');
    if (!router || !list || !ratio) return;
    ratio.textContent = router.prompt_blocks > 0 ? percent(router.cache_hit_ratio) : '–';
    list.replaceChildren();
    for (const [reason, requests] of Object.entries(router.decisions ?? {})) {
      const item = document.createElement('div');
      const term = document.createElement('dt');
      const value = document.createElement('dd');
      term.textContent = reason.replace('_', ' ');
      value.textContent = count(requests);
      item.append(term, value);
      list.append(item);
    }
  }

  renderTotals(stats, before) {
    const totals = stats.totals ?? {};
    const finished = totals.requests_finished ?? {};
    const set = (id, text) => { this.root.querySelector(id).textContent = text; };
    const generationRate = perSecond(stats, before, (s) => s.totals?.generation_tokens ?? 0);
    const promptRate = perSecond(stats, before, (s) => s.totals?.prompt_tokens ?? 0);
    set('#total-generation-rate', generationRate === null ? '–' : decimal.format(generationRate));
    set('#total-generation-tokens', count(totals.generation_tokens ?? 0));
    set('#total-prompt-tokens', count(totals.prompt_tokens ?? 0));
    set('#total-finished', count(finishedOf(finished)));
    set('#total-aborted', count(finished.abort ?? 0));
    set('#total-errors', count(finished.error ?? 0));
    set('#engine-model', stats.model ?? '');
    this.totals.push({t: stats.time, generationRate, promptRate});
    if (this.totals.length > HISTORY) this.totals.shift();
    this.totalsChart.draw(this.totals);
  }

  renderReplicas(stats) {
    const listed = new Set();
    this.replicaRows.replaceChildren();
    for (const r of stats.replicas ?? []) {
      listed.add(r.id);
      let replica = this.replicas.get(r.id);
      if (!replica) replica = this.addReplica(r.id);
      const previous = replica.previous;
      replica.previous = {...r, time: stats.time};
      replica.samples.push({
        t: stats.time, waiting: r.num_waiting, running: r.num_running, swapped: r.num_swapped,
        kv: r.kv_cache_usage, cpuKv: r.cpu_cache_usage, tierKv: r.kv_offload_usage ?? 0,
        hitRate: r.prefix_cache_hit_rate, tierHitRate: r.tier_cache_hit_rate ?? 0,
        preemptions: perSecond(replica.previous, previous, (s) => s.num_preemptions ?? 0),
        stepMs: r.step_seconds * 1000, tokensPerStep: r.tokens_per_step,
        generationRate: perSecond(replica.previous, previous, (s) => s.generation_tokens ?? 0),
      });
      if (replica.samples.length > HISTORY) replica.samples.shift();
      replica.heading.textContent = `Replica ${r.id} · ${r.device}`;
      replica.badge.textContent = r.state;
      replica.badge.className = `state state-${r.state}`;
      for (const chart of replica.charts) chart.draw(replica.samples);
      this.addRow(r);
    }
    for (const [id, replica] of this.replicas) {
      if (listed.has(id)) continue;
      replica.card.remove();
      this.replicas.delete(id);
    }
  }

  addReplica(id) {
    const card = document.createElement('section');
    card.className = 'replica-card';
    const header = document.createElement('h3');
    const heading = document.createElement('span');
    const badge = document.createElement('span');
    header.append(heading, ' ', badge);
    const grid = document.createElement('div');
    grid.className = 'chart-grid';
    const charts = REPLICA_CHARTS.map(([title, series, options]) => new Chart(title, series, options));
    for (const chart of charts) grid.append(chart.root);
    card.append(header, grid);
    card.setAttribute('aria-label', `replica ${id}`);
    // Keep the cards in id order as replicas come and go.
    const after = [...this.replicas.entries()].filter(([other]) => other > id).sort((a, b) => a[0] - b[0])[0];
    this.replicaCards.insertBefore(card, after ? after[1].card : null);
    const replica = {samples: [], previous: null, card, heading, badge, charts};
    this.replicas.set(id, replica);
    return replica;
  }

  addRow(r) {
    const row = this.replicaRows.insertRow();
    row.dataset.replica = r.id;
    cell(row, String(r.id));
    const state = cell(row, '');
    const badge = document.createElement('span');
    badge.className = `state state-${r.state}`;
    badge.textContent = r.state;
    state.append(badge);
    cell(row, r.device);
    cell(row, count(r.num_running), 'num running');
    cell(row, count(r.num_waiting), 'num');
    cell(row, count(r.num_swapped), 'num');
    cell(row, percent(r.kv_cache_usage), 'num');
    cell(row, percent(r.cpu_cache_usage), 'num');
    cell(row, percent(r.prefix_cache_hit_rate), 'num');
    cell(row, percent(r.tier_cache_hit_rate ?? 0), 'num');
    cell(row, count(r.num_steps), 'num');
    cell(row, count(r.generation_tokens), 'num');
    cell(row, count(finishedOf(r.requests_finished)), 'num');
    cell(row, count(r.requests_finished?.abort ?? 0), 'num');
  }

  renderActors(actors) {
    const scale = Math.max(8, ...actors.map((a) => a.mailbox_depth));
    const listed = new Set();
    for (const a of actors) {
      listed.add(a.name);
      let actor = this.actors.get(a.name);
      if (!actor) {
        actor = this.addActor(a.name);
        this.actors.set(a.name, actor);
      }
      actor.depths.push(a.mailbox_depth);
      if (actor.depths.length > HISTORY) actor.depths.shift();
      actor.bar.style.width = `${Math.min(100, (a.mailbox_depth / scale) * 100)}%`;
      actor.value.textContent = count(a.mailbox_depth);
      actor.sparkline.draw(actor.depths, HISTORY);
    }
    for (const [name, actor] of this.actors) {
      if (listed.has(name)) continue;
      actor.row.remove();
      this.actors.delete(name);
    }
  }

  addActor(name) {
    const row = document.createElement('li');
    const label = document.createElement('span');
    label.className = 'actor-name';
    label.textContent = name;
    const track = document.createElement('span');
    track.className = 'bar';
    const bar = document.createElement('span');
    track.append(bar);
    const value = document.createElement('output');
    value.setAttribute('aria-label', `${name} mailbox depth`);
    const sparkline = new Sparkline();
    row.append(label, track, sparkline.svg, value);
    this.actorList.append(row);
    return {depths: [], row, bar, value, sparkline};
  }
}
