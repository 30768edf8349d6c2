// The book's live widgets (tools/live.py): each control picks a point of the grid; the frame drawn there
// for those values is shown (all frames are preloaded, so a move only swaps the image).
(function () {
  for (const root of document.querySelectorAll('.tnb-live:not([data-ready])')) {
    root.dataset.ready = '1';
    const d = JSON.parse(root.querySelector('script[type="application/json"]').textContent);
    const img = root.querySelector('.tnb-live-img');
    const error = root.querySelector('.tnb-live-error');
    const inputs = Array.from(root.querySelectorAll('[data-c]'));
    const fixed = Array.from(root.querySelectorAll('.tnb-live-fixed output'));
    const preload = d.frames.map((f) => {
      if (!f.image) return null;
      const im = new Image();
      im.src = f.image;
      return im;
    });
    const at = (el) => (el.type === 'checkbox' ? Number(el.checked) : Number(el.value));
    root.tnbIndex = () => inputs.reduce((k, el, c) => k * d.sizes[c] + at(el), 0);
    root.tnbValues = () => Object.fromEntries(inputs.map((el, c) => [d.names[c], d.values[c][at(el)]]));
    root.tnbFrames = preload;
    const show = () => {
      inputs.forEach((el, c) => {
        const out = el.parentNode.querySelector('output');
        if (out) out.textContent = d.labels[c][at(el)];
      });
      const f = d.frames[root.tnbIndex()];
      error.textContent = f.error || '';
      img.style.display = f.image ? '' : 'none';
      if (f.image) img.src = f.image;
      f.fixed.forEach((text, i) => {
        fixed[i].textContent = text;
      });
    };
    for (const el of inputs) {
      el.addEventListener('input', show);
      el.addEventListener('change', show);
    }
    show();
  }
})();
