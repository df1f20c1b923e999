// A small Markdown renderer for model answers: headings, bold/italic, inline code, fenced
// code blocks, bulleted and numbered lists, paragraphs and http(s) links. Safe by
// construction: every character of the input is HTML-escaped before any tag is added, and
// the only tags added are the fixed ones below (a link's href is an escaped http(s) URL).
// A fence left open (the answer is still streaming) runs to the end of the text.

const ESCAPES = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'};

export function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// Inline markup of one escaped line: code spans first (their content stays literal), then
// links, bold and italic. Code spans and links are parked as \u0000N\u0000 placeholders so
// that later rules cannot reach inside them.
function inline(escaped) {
  const parked = [];
  const park = (html) => `\u0000${parked.push(html) - 1}\u0000`;
  let s = escaped.replace(/`([^`]+)`/g, (_, code) => park(`<code>${code}</code>`));
  s = s.replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g,
                (_, label, url) => park(`<a href="${url}" rel="noopener noreferrer" target="_blank">${label}</a>`));
  s = s.replace(/\*\*(?=\S)([^*]*?\S)\*\*/g, '<strong>$1</strong>');
  s = s.replace(/__(?=\S)([^_]*?\S)__/g, '<strong>$1</strong>');
  s = s.replace(/(^|[^*\w])\*(?=\S)([^*]*?\S)\*(?!\w)/g, '$1<em>$2</em>');
  s = s.replace(/(^|[^_\w])_(?=\S)([^_]*?\S)_(?!\w)/g, '$1<em>$2</em>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => parked[Number(i)]);
}

const FENCE = /^\s*```\s*([\w+-]*)\s*$/;
const HEADING = /^(#{1,6})\s+(.*)$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;

/** Markdown text -> HTML. */
export function renderMarkdown(text) {
  const lines = escapeHtml(text.replace(/\u0000/g, '')).split('\n');  // NUL marks parked spans
  const out = [];
  let paragraph = [];
  let list = null;  // {tag: 'ul' | 'ol', items: [html]}

  const flushParagraph = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join('<br>')}</p>`);
    paragraph = [];
  };
  const flushList = () => {
    if (list) out.push(`<${list.tag}>${list.items.map((i) => `<li>${i}</li>`).join('')}</${list.tag}>`);
    list = null;
  };
  const addItem = (tag, html) => {
    flushParagraph();
    if (list && list.tag !== tag) flushList();
    list ??= {tag, items: []};
    list.items.push(html);
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      flushParagraph();
      flushList();
      const code = [];
      while (++i < lines.length && !FENCE.test(lines[i])) code.push(lines[i]);
      const lang = fence[1] ? ` class="language-${fence[1]}"` : '';
      out.push(`<pre><code${lang}>${code.join('\n')}</code></pre>`);
      continue;
    }
    let m;
    if ((m = HEADING.exec(line))) {
      flushParagraph();
      flushList();
      const level = m[1].length;
      out.push(`<h${level}>${inline(m[2])}</h${level}>`);
    } else if ((m = BULLET.exec(line))) {
      addItem('ul', inline(m[1]));
    } else if ((m = NUMBERED.exec(line))) {
      addItem('ol', inline(m[1]));
    } else if (line.trim() === '') {
      flushParagraph();
      flushList();
    } else if (list && /^\s{2,}\S/.test(line)) {
      list.items[list.items.length - 1] += ' ' + inline(line.trim());  // a wrapped item
    } else {
      flushList();
      paragraph.push(line);
    }
  }
  flushParagraph();
  flushList();
  return out.join('');
}
