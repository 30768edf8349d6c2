// Notebooks 09's, 10's and 12's trained models in the book's pages, with no kernel (tools/live_models.py exports them).
// onnxruntime-web's wasm build on one thread; the models and this file sit in one folder.
import * as ort from "./ort.wasm.min.mjs";

const here = new URL(".", import.meta.url).href;
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = here;
// The wasm ships gzipped (3.1 MB instead of 12.4): unpacked here, once, before the first session.
async function unpackWasm() {
  const gz = await fetch(here + "ort-wasm-simd-threaded.wasm.gz");
  ort.env.wasm.wasmBinary = await new Response(gz.body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
}
let unpacked;
const sessions = {};
const session = (name) =>
  (sessions[name] ??= (unpacked ??= unpackWasm()).then(() => ort.InferenceSession.create(here + name + ".onnx")));
const ids64 = (a) => new ort.Tensor("int64", BigInt64Array.from(a, BigInt), [1, a.length]);
// The arg-max, ties to the lower index as torch.argmax.
const argmax = (x) => { let j = 0, best = x[0]; for (let i = 1; i < x.length; i++) if (x[i] > best) best = x[(j = i)]; return j; };
const meta = (name) => (sessions[name + ".json"] ??= fetch(here + name + ".json").then((r) => r.json()));
// One call at a time (the sessions share one wasm instance, whose calls must not interleave): each call (a redraw,
// a warming round, a test's) waits for the one before.
let queue = Promise.resolve();
const alone = (job) => (queue = queue.then(job, job));
export const PAD = 0, BOS = 1, EOS = 2;

// rv.greedy_decode for one source: the arg-max at the last position until EOS or maxNew tokens. Returns the
// tokens (EOS included) and the cross-attention weights (layers, heads, T, S) of the last step.
export const reverse = (src, maxNew) => alone(async () => {
  const s = await session("reversal"), ys = [BOS];
  let cross;
  for (let t = 0; t < maxNew && ys.at(-1) !== EOS; t++) {
    const out = await s.run({ src: ids64(src), ys: ids64(ys) });
    cross = out[s.outputNames[1]];
    ys.push(argmax(out[s.outputNames[0]].data));
  }
  return { out: ys.slice(1), cross };
});

// A seeded generator (mulberry32): the page's samples are its own, not PyTorch's.
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The indices of the k largest of x (ties to the lower indices), in index order: one pass, a min-heap of them (the
// least, of equal ones the last, at its root).
function largest(x, k) {
  const less = (a, b) => x[a] < x[b] || (x[a] === x[b] && a > b);
  const h = Int32Array.from({ length: k }, (_, i) => i).sort((a, b) => x[a] - x[b] || b - a); // sorted: a heap
  for (let i = k, low = x[h[0]]; i < x.length; i++) {
    if (x[i] <= low) continue;
    h[0] = i;
    for (let j = 0, c = 1; c < k; j = c, c = 2 * c + 1) {
      if (c + 1 < k && less(h[c + 1], h[c])) c++;
      if (!less(h[c], h[j])) break;
      const t = h[c];
      (h[c] = h[j]), (h[j] = t);
    }
    low = x[h[0]];
  }
  return h.sort();
}

// softmax(top_k_filter(scores) / temperature), scores the log-probabilities up to a constant: the k largest (ties to
// the lower indices), drawn in index order. Words more than 40 temperatures below the best are left out: e^-40 each,
// 33k of them weigh less than the generator's 2^-32 step.
// keep, w: room for the kept words and their weights.
function sample(scores, temperature, topK, rand, keep, w) {
  const top = topK > 0 && topK < scores.length ? largest(scores, topK) : null;
  const best = top ? Math.max(...Array.from(top, (i) => scores[i])) : scores[argmax(scores)];
  let sum = 0, m = 0;
  const add = (i) => scores[i] >= best - 40 * temperature && ((sum += w[m] = Math.exp((scores[i] - best) / temperature)), (keep[m++] = i));
  if (top) top.forEach(add);
  else for (let i = 0; i < scores.length; i++) add(i);
  let u = rand() * sum;
  for (let j = 0; j < m; j++) if ((u -= w[j]) <= 0) return keep[j];
  return keep[m - 1];
}

// generate(prompt, nNew, temperature, top_k, seed, name): greedy when temperature is 0 (PyTorch's tokens); name: the
// model ("lm": notebook 10's, "capstone": 12's). Words are numbered as <name>.json's itos lists them (the head's
// order: an adaptive head's frequency ranks, as PyTorch picks them).
// With a KV cache, as PyTorch's: the prompt in one step (no past), then one word a step, its past the step before's.
export const generate = (ids, nNew, temperature = 0, topK = 0, seed = 0, name = "lm") => alone(async () => {
  const s = await session(name), rand = random(seed), { past, itos } = await meta(name);
  const keep = new Int32Array(itos.length), w = new Float64Array(itos.length);
  let feed = { w: ids64(ids), past: new ort.Tensor("float32", [], past) };
  ids = [...ids];
  for (let i = 0; i < nNew; i++) {
    const { scores, present } = await s.run(feed);
    ids.push(temperature === 0 ? argmax(scores.data) : sample(scores.data, temperature, topK, rand, keep, w));
    feed = { w: ids64(ids.slice(-1)), past: present };
  }
  return ids;
});

// ----------------------------------------------------------------------------- the widgets
const html = (s) => Object.assign(document.createElement("template"), { innerHTML: s.trim() }).content.firstChild;
const field = (label, input) => `<label style="margin-right:1em">${label} ${input}</label>`;

function heatmap(canvas, w, rows, cols) {
  const [cell, left, top] = [34, 40, 8], ctx = canvas.getContext("2d");
  canvas.width = left + cell * cols.length;
  canvas.height = top + cell * rows.length + 24;
  ctx.font = "12px sans-serif";
  rows.forEach((r, i) => {
    ctx.fillStyle = "#000";
    ctx.fillText(r, 2, top + cell * i + 20);
    cols.forEach((c, j) => {
      const v = w[i * cols.length + j], g = Math.round(255 * (1 - v));
      ctx.fillStyle = `rgb(${g},${g},255)`;
      ctx.fillRect(left + cell * j, top + cell * i, cell - 1, cell - 1);
    });
  });
  ctx.fillStyle = "#000";
  cols.forEach((c, j) => ctx.fillText(c, left + cell * j + 10, top + cell * rows.length + 16));
}

// One redraw at a time (a session runs one call at a time), the last change always drawn: a change made during a
// redraw is drawn once that one ends, and the changes in between are skipped.
function serial(redraw) {
  let busy = null, again = false;
  return function draw() {
    if (busy) return (again = true), busy;
    return (busy = (async () => { do { again = false; await redraw(); } while (again); })().finally(() => (busy = null)));
  };
}

// The browser first runs the wasm build's code unoptimized (several times slower) and compiles its hot parts again,
// on other threads, while it runs: a second or two of decoding. Done after the widget's first drawing, by short rounds
// for at least 1.5 s and until they stop getting faster (a change the reader makes waits for one round at most);
// el.dataset.warm says it is done.
async function warm(el, round) {
  const t0 = performance.now();
  let best = Infinity, since = 0;
  for (let r = 0; r < 400 && (performance.now() - t0 < 1500 || since < 10); r++) {
    const t = performance.now();
    await round(r);
    const dt = performance.now() - t;
    [best, since] = dt < 0.9 * best ? [dt, 0] : [best, since + 1];
  }
  el.dataset.warm = "";
}

async function reversalWidget(el) {
  const { maxSrc, layers, heads } = await meta("reversal");
  const heads_ = [`<option value="-1">mean of heads</option>`];
  for (let h = 0; h < heads; h++) heads_.push(`<option value="${h}">head ${h + 1}</option>`);
  const layers_ = Array.from({ length: layers }, (_, i) => `<option value="${i}">decoder layer ${i + 1}</option>`);
  el.append(html(`<div>${field("source", '<input value="3 5 7 9 4">')}${field("layer", `<select>${layers_}</select>`)}
    ${field("head", `<select>${heads_}</select>`)}</div>`), html("<pre></pre>"), html("<canvas></canvas>"));
  const [text, layer, head] = el.querySelectorAll("input, select"), pre = el.querySelector("pre");
  layer.value = layers - 1;
  const label = (t) => ({ [PAD]: "PAD", [BOS]: "BOS", [EOS]: "EOS" })[t] ?? String(t);
  async function redraw() {
    const src = text.value.replace(/[,[\]]/g, " ").split(/\s+/).filter(Boolean).map(Number);
    if (!src.length || src.some((t) => !Number.isInteger(t) || t < 3 || t > 12) || src.length > maxSrc) {
      pre.textContent = `type 1 to ${maxSrc} symbols, the integers 3..12 (0, 1, 2 are PAD, BOS, EOS)`;
      return;
    }
    const { out, cross } = await reverse(src, src.length + 4), k = +head.value;
    const ended = out.at(-1) === EOS, pred = ended ? out.slice(0, -1) : out;
    const ok = ended && pred.join() === src.toReversed().join();
    const where = `cross-attention, decoder layer ${+layer.value + 1}, ${k < 0 ? "mean of heads" : `head ${k + 1}`}`;
    pre.textContent = `output [${pred}]${ended ? "" : " (no EOS)"}  ${ok ? "✓ correct" : `✗ expected [${src.toReversed()}]`}` +
      (src.length < 3 || src.length > 8 ? "\n(length outside the training range 3–8)" : "") +
      `\n${where}: rows the output tokens (queries), columns the source tokens (keys)`;
    const [, h, T, S] = cross.dims, l = +layer.value, w = new Float32Array(T * S);
    for (let q = 0; q < h; q++) if (k < 0 || q === k)
      for (let i = 0; i < T * S; i++) w[i] += cross.data[(l * h + q) * T * S + i] / (k < 0 ? h : 1);
    heatmap(el.querySelector("canvas"), w, out.map(label), src);
  }
  const draw = serial(redraw);
  for (const c of [text, layer, head]) c.addEventListener("change", draw);
  await draw();
  await warm(el, () => reverse([3, 5, 7, 9, 4], 9));
}

async function lmWidget(el, name) {
  const vocab = await meta(name), stoi = new Map(vocab.itos.map((w, i) => [w, i]));
  const maxNew = Math.max(1, Math.min(100, vocab.max_len - 32));
  const range = (min, max, step, value) => `<input type="range" min="${min}" max="${max}" step="${step}" value="${value}"><output></output>`;
  el.append(html(`<div>${field("prompt", '<input size="50">')}<br>
    ${field("temperature", range(0, 2, 0.1, 0.8))}${field("top-k (0 = off)", range(0, 200, 5, 40))}
    ${field("new words", range(1, maxNew, 1, Math.min(30, maxNew)))}${field("seed", '<input type="number" min="0" value="0" style="width:6em">')}</div>`),
    html("<pre style='white-space:pre-wrap'></pre>"));
  const [prompt, temperature, topK, length, seed] = el.querySelectorAll("input"), pre = el.querySelector("pre");
  prompt.value = el.dataset.prompt ?? "The history of machine learning";
  async function redraw() {
    for (const r of el.querySelectorAll("input[type=range]")) r.nextSibling.value = r.value;
    const words = prompt.value.split(/\s+/).filter(Boolean), n = +length.value;
    const ids = (words.length ? words : ["<eos>"]).map((w) => stoi.get(w) ?? vocab.unk).slice(-(vocab.max_len - n));
    const out = await generate(ids, n, +temperature.value, +topK.value, +seed.value, name);
    const unknown = words.filter((w) => !stoi.has(w));
    pre.textContent = `${ids.map((i) => vocab.itos[i]).join(" ")} ▶ ${out.slice(ids.length).map((i) => vocab.itos[i]).join(" ")}` +
      (unknown.length ? `\nnot in the vocabulary (-> <unk>): ${unknown.join(", ")}` : "");
  }
  const draw = serial(redraw);
  for (const c of [prompt, temperature, topK, length, seed]) c.addEventListener("change", draw);
  await draw();
  await warm(el, (r) => generate([1, 2, 3], 10, r % 2, 40, r, name)); // greedy, then sampled
}

export function mount(el) {
  return el.dataset.model === "reversal" ? reversalWidget(el) : lmWidget(el, el.dataset.model);
}
