// The images attached to the next chat message: picked with the file input, pasted into the
// message box or dropped on it. Each is read into a data: URL (the page's policy allows
// images from data: only) and shown as a thumbnail with a button that removes it. Files that
// are not PNG, JPEG, WebP or GIF, and files above the server's default --max-image-bytes,
// are refused with a visible note.

const TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];
// 12 MiB: its data: URL (a third larger) must fit the server's default 16 MiB request body.
const MAX_BYTES = 12 * 1024 * 1024;
const mib = new Intl.NumberFormat('en', {maximumFractionDigits: 1});

/** A File as a data: URL ("data:image/png;base64,..."). */
function readDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** Why `file` cannot be attached, or '' when it can. */
function refusal(file) {
  if (!TYPES.includes(file.type)) return `${file.name} is not a PNG, JPEG, WebP or GIF image.`;
  if (file.size > MAX_BYTES) {
    return `${file.name} is ${mib.format(file.size / 1024 / 1024)} MiB: images above 12 MiB are refused.`;
  }
  return '';
}

/** An <img> of a data: URL, the thumbnail of both the composer and the conversation. */
export function thumbnail(url, alt) {
  const img = document.createElement('img');
  img.className = 'thumb';
  img.src = url;
  img.alt = alt;
  return img;
}

export class Attachments {
  /** `changed()` is called whenever the list of images changes. */
  constructor(root, changed = () => {}) {
    const $ = (id) => root.querySelector(id);
    this.input = $('#attach');
    this.button = $('#attach-button');
    this.list = $('#attachments');
    this.note = $('#attach-note');
    this.dropZone = $('#prompt');
    this.changed = changed;
    this.images = [];  // [{name, url}] in the order attached

    this.button.addEventListener('click', () => this.input.click());
    this.input.addEventListener('change', () => {
      this.add([...this.input.files]);
      this.input.value = '';  // the same file may be picked again
    });
    this.dropZone.addEventListener('paste', (event) => this.onPaste(event));
    this.dropZone.addEventListener('dragover', (event) => this.onDragOver(event));
    this.dropZone.addEventListener('dragleave', () => this.dropZone.classList.remove('dropping'));
    this.dropZone.addEventListener('drop', (event) => this.onDrop(event));
  }

  get count() {
    return this.images.length;
  }

  /** The attached images, [{name, url}] in the order attached; the list is emptied. */
  take() {
    const images = this.images;
    this.clear();
    return images;
  }

  clear() {
    this.images = [];
    this.note.textContent = '';
    this.render();
  }

  /** Off in raw completion mode, which takes no images; turning it off drops what was attached. */
  setEnabled(enabled) {
    this.button.disabled = !enabled;
    if (enabled || !this.images.length) return;
    this.clear();
    this.note.textContent = 'Raw completion takes no images: the attached ones were removed.';
  }

  /** Reads the acceptable `files` and adds them; says why any other was refused. */
  async add(files) {
    if (this.button.disabled) {
      this.note.textContent = 'Raw completion takes no images: switch it off to attach one.';
      return;
    }
    const refused = files.map(refusal).filter(Boolean);
    const accepted = files.filter((file) => !refusal(file));
    this.note.textContent = refused.join(' ');
    for (const file of accepted) {
      try {
        this.images.push({name: file.name || 'pasted image', url: await readDataUrl(file)});
      } catch (error) {
        this.note.textContent += ` ${file.name} could not be read (${error?.message ?? error}).`;
      }
    }
    this.render();
  }

  remove(index) {
    this.images.splice(index, 1);
    this.render();
    (this.list.querySelectorAll('button')[index] ?? this.button).focus();
  }

  render() {
    this.list.replaceChildren(...this.images.map(({name, url}, i) => {
      const item = document.createElement('li');
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'remove';
      remove.textContent = '×';
      remove.title = `Remove ${name}`;
      remove.setAttribute('aria-label', remove.title);
      remove.addEventListener('click', () => this.remove(i));
      item.append(thumbnail(url, name), remove);
      return item;
    }));
    this.list.hidden = !this.images.length;
    this.changed();
  }

  onPaste(event) {
    const files = [...(event.clipboardData?.files ?? [])];
    if (!files.length) return;  // text: pasted as usual
    event.preventDefault();
    this.add(files);
  }

  onDragOver(event) {
    if (this.button.disabled || !event.dataTransfer?.types.includes('Files')) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    this.dropZone.classList.add('dropping');
  }

  onDrop(event) {
    this.dropZone.classList.remove('dropping');
    const files = [...(event.dataTransfer?.files ?? [])];
    if (!files.length) return;
    event.preventDefault();
    this.add(files);
  }
}
