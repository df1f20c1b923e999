// Small time-series charts drawn as inline SVG: a window of up to 120 seconds that ends at
// the newest sample, one polyline per series, and a legend in HTML with each series' latest
// value (the SVG stretches to its box, so it holds no text).

const SVG_NS = 'http://www.w3.org/2000/svg';
export const WINDOW_SECONDS = 120;
const MIN_SPAN_SECONDS = 20;
const MIN_SPARKLINE_POINTS = 20;
const WIDTH = 240;  // viewBox units; the SVG is stretched to its box
const HEIGHT = 60;

function svgElement(name, attributes = {}) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  return element;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A round upper bound for a y axis: 1, 2 or 5 times a power of ten, at least `floor`. */
function niceMax(value, floor) {
  const target = Math.max(value, floor);
  const power = 10 ** Math.floor(Math.log10(target));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= target);
}

export class Chart {
  /**
   * `series`: [{label, key}] read from each sample; `options`: {max (a fixed y maximum, as
   * 1 for shares), floor (the least automatic maximum), format(value) -> text}.
   */
  constructor(title, series, options = {}) {
    this.series = series;
    this.options = {floor: 1, format: (v) => String(v), ...options};
    this.title = title;
    this.root = element('figure', 'chart');
    const caption = element('figcaption');
    caption.append(element('span', 'chart-title', title));
    this.scale = element('span', 'chart-scale');
    caption.append(this.scale);
    this.svg = svgElement('svg', {viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none',
                                  role: 'img', 'aria-label': title});
    for (const y of [0, HEIGHT / 2]) {
      this.svg.append(svgElement('line', {x1: 0, x2: WIDTH, y1: y + 0.5, y2: y + 0.5, class: 'grid'}));
    }
    this.lines = series.map((_, i) => {
      const line = svgElement('polyline', {class: `series s${i}`, fill: 'none'});
      this.svg.append(line);
      return line;
    });
    const legend = element('ul', 'legend');
    this.values = series.map((s, i) => {
      const item = element('li');
      item.append(element('span', `swatch s${i}`), element('span', 'legend-label', s.label));
      const value = element('output', '', '–');
      item.append(value);
      legend.append(item);
      return value;
    });
    this.root.append(caption, this.svg, legend);
  }

  /** `samples`: [{t (seconds), [key]: number | null}], oldest first. */
  draw(samples) {
    if (!samples.length) return;
    // The x axis spans the samples held, at least 20 s and at most the 120-s window.
    const end = samples[samples.length - 1].t;
    const span = Math.min(WINDOW_SECONDS, Math.max(MIN_SPAN_SECONDS, end - samples[0].t));
    const {format} = this.options;
    let max = this.options.max;
    if (max === undefined) {
      let highest = 0;
      for (const sample of samples)
        for (const s of this.series) highest = Math.max(highest, sample[s.key] ?? 0);
      max = niceMax(highest, this.options.floor);
    }
    this.scale.textContent = `max ${format(max)}`;
    const described = [];
    this.series.forEach((s, i) => {
      const points = [];
      for (const sample of samples) {
        const value = sample[s.key];
        if (value === null || value === undefined) continue;
        const x = WIDTH - ((end - sample.t) / span) * WIDTH;
        const y = HEIGHT - (Math.min(value, max) / max) * (HEIGHT - 2) - 1;
        points.push(`${x.toFixed(1)},${y.toFixed(1)}`);
      }
      this.lines[i].setAttribute('points', points.join(' '));
      const latest = samples[samples.length - 1][s.key];
      const text = latest === null || latest === undefined ? '–' : format(latest);
      this.values[i].textContent = text;
      described.push(`${s.label} ${text}`);
    });
    this.svg.setAttribute('aria-label', `${this.title}: ${described.join(', ')}`);
  }
}

/** A sparkline with no axes or legend (actors' mailbox depths): values oldest first. */
export class Sparkline {
  constructor() {
    this.svg = svgElement('svg', {viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none',
                                  class: 'sparkline', 'aria-hidden': 'true'});
    this.line = svgElement('polyline', {class: 'series s0', fill: 'none'});
    this.svg.append(this.line);
  }

  /** `values` oldest first; the x axis holds at least 20 and at most `capacity` of them. */
  draw(values, capacity) {
    const max = niceMax(Math.max(...values, 0), 1);
    const step = WIDTH / (Math.min(capacity, Math.max(values.length, MIN_SPARKLINE_POINTS)) - 1);
    const offset = WIDTH - (values.length - 1) * step;
    this.line.setAttribute('points', values.map((v, i) =>
      `${(offset + i * step).toFixed(1)},${(HEIGHT - (v / max) * (HEIGHT - 4) - 2).toFixed(1)}`).join(' '));
  }
}
