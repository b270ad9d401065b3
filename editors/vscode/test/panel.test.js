'use strict';
// The Fuse Results panel's page and trace charts (pure; compiled by `npm test`).
const test = require('node:test');
const assert = require('node:assert/strict');
const { contentSecurityPolicy, emptyState, mainHtml, makeNonce, panelHtml, pictureStem, trainingHtml } = require('../out/panelHtml');
const { equationChart, fixpointChart, lossChart, milliseconds, traceHtml, MAX_BARS } = require('../out/traceChart');
const { escapeHtml, pictureDataUri } = require('../out/html');

const PAGE = { cspSource: 'https://file+.vscode-resource.vscode-cdn.net', styleUri: 'https://x/media/panel.css',
  scriptUri: 'https://x/media/panel.js', nonce: 'abc123' };
const Y = { shape: [2], dtype: 'float32', size: 2, min: 2, max: 4, mean: 3, std: 1, nonfinite: 0, nonzeros: 2,
  preview: [2, 4], truncated: false };
const RUN = {
  ok: true, program: 'good.fuse', backend: 'numpy', device: 'cpu', elapsed_ms: 4.2, target: null, sinks: [],
  outputs: { Y },
  queries: [
    { text: 'Ancestor(Alice, x)?', tensor: 'Ancestor', free: ['x'], boolean: true, answer: '2 answers',
      tuples: [['Bob'], ['<Carol>']], ...Y },
    { text: 'Y?', tensor: 'Y', free: ['i'], boolean: false, answer: '(2,)', ...Y },
  ],
};
const TRACE = {
  equations: [
    { tensor: 'Parent', seconds: 0.0001, shape: [3, 3], nonzeros: 2 },
    { tensor: 'Ancestor', seconds: 0.004, shape: [3, 3], nonzeros: 3, recursive: true },
  ],
  fixpoints: [{ group: ['Ancestor'], strategy: 'semi_naive', rounds: [
    { iteration: 1, facts_added: 2, seconds: 0.001 }, { iteration: 2, facts_added: 1, seconds: 0.001 },
    { iteration: 3, facts_added: 0, seconds: 0.0005 }] }],
};

function state(extra) {
  return { ...emptyState(), program: 'good.fuse', run: RUN, runCount: 1, answeredAt: 1234, ...extra };
}

test('a strict content security policy: no network, no inline style, one script by its nonce', () => {
  const csp = contentSecurityPolicy(PAGE.cspSource, 'abc123');
  assert.match(csp, /^default-src 'none'; /);
  assert.match(csp, /img-src https:\/\/file\+\.vscode-resource\.vscode-cdn\.net data:;/);
  assert.match(csp, /style-src https:\/\/file\+\.vscode-resource\.vscode-cdn\.net;/);
  assert.match(csp, /script-src 'nonce-abc123';/);
  const html = panelHtml(state(), PAGE);
  assert.ok(html.includes(`content="${csp.replace(/'/g, '&#39;')}"`));
  assert.deepEqual(html.match(/<script[^>]*>/g), ['<script nonce="abc123" src="https://x/media/panel.js">']);
  assert.doesNotMatch(html, /style="|<style|\son\w+=|https?:\/\/(?!x\/media|file\+)/);
  assert.equal(makeNonce(Buffer.alloc(16, 255)), 'f'.repeat(32));
  // an update is the page's <main> alone
  const main = mainHtml(state());
  assert.ok(html.includes(main));
  assert.match(main, /^<main id="fuse-results" [^>]*>[^]*<\/main>$/);
});

test('each export: shape, dtype, statistics and a picture once drawn', () => {
  const pending = panelHtml(state({ picturesState: 'pending' }), PAGE);
  assert.match(pending, /<h3>Y<\/h3>/);
  assert.match(pending, /shape \(2,\)<\/span> · <span class="dtype">float32<\/span> · 2 values/);
  assert.match(pending, /<th>min<\/th><th>max<\/th><th>mean<\/th><th>std<\/th><th>non-zeros<\/th>/);
  assert.match(pending, /<td>2<\/td><td>4<\/td><td>3<\/td><td>1<\/td><td>2<\/td>/);
  assert.match(pending, /drawing the picture/);
  assert.match(pending, /data-pictures="pending"/);
  assert.match(pending, /data-answered-ms="1234"/);
  const uri = pictureDataUri('Y.svg', Buffer.from('<svg/>'));
  assert.equal(uri, 'data:image/svg+xml;base64,PHN2Zy8+');
  const ready = panelHtml(state({ picturesState: 'ready', pictures: { 'Y.svg': uri } }), PAGE);
  assert.match(ready, /<img class="picture" src="data:image\/svg\+xml;base64,PHN2Zy8\+" alt="picture of Y" data-file="Y.svg">/);
  const failed = panelHtml(state({ picturesState: 'failed', picturesNote: 'no matplotlib' }), PAGE);
  assert.match(failed, /no picture: no matplotlib/);
});

test('a relation export: its count and its tuples, one a line, not statistics', () => {
  const tuples = Array.from({ length: 100 }, (_, k) => [`N${k}`, `<${k}>`]);
  const reach = { ...Y, shape: [120, 120], size: 14400, nonzeros: 130, relation: true, count: 130, tuples,
    tuple_texts: tuples.map(([a, b]) => `(${a}, "${b}")`) };
  const html = mainHtml(state({ run: { ...RUN, outputs: { Reach: reach, Y } } }));
  const section = html.match(/<section class="export relation" data-name="Reach">.*?<\/section>/s)[0];
  assert.match(section, /<p class="facts"><span class="count">130 tuples<\/span><\/p><ul class="tuples">/);
  assert.match(section, /<li><code>\(N0, &quot;&lt;0&gt;&quot;\)<\/code><\/li><li><code>\(N1, /);
  assert.equal((section.match(/<li>/g) || []).length, 100);
  assert.match(section, /<p class="note">\.\.\. and 30 more<\/p>/);
  assert.doesNotMatch(section, /class="stats"|shape \(/);
  // a numeric export keeps its statistics
  assert.match(html, /<section class="export" data-name="Y"><h3>Y<\/h3><p class="facts"><span class="shape">shape \(2,\)/);
  // all tuples sent, from a server without texts: written as a program writes them
  const small = { ...reach, count: 2, tuples: [['Alice', 'ann'], ['Bob', 3]], tuple_texts: undefined };
  const page = mainHtml(state({ run: { ...RUN, outputs: { R: small } } }));
  assert.match(page, /<span class="count">2 tuples<\/span><\/p><ul class="tuples"><li><code>\(Alice, &quot;ann&quot;\)<\/code><\/li><li><code>\(Bob, 3\)<\/code><\/li><\/ul><\/section>/);
});

test('what a run left out for an error, not what it did not need', () => {
  const run = { ...RUN, not_run: [
    { what: 'D', line: 8, reason: '`Nope` is not defined [undefined-tensor]' },
    { what: 'E', line: 9, reason: 'not needed by the target' }] };
  const page = panelHtml(state({ run }), PAGE);
  assert.match(page, /<h2>Not run<\/h2><ul><li><code>D<\/code> \(line 8\): `Nope` is not defined \[undefined-tensor\]<\/li><\/ul>/);
  assert.doesNotMatch(page, /<code>E<\/code>/);
});

test('queries as a table: Boolean answers as rows, numeric ones with statistics and picture', () => {
  const uri = pictureDataUri('query-2.png', Buffer.from([1, 2, 3]));
  const html = panelHtml(state({ picturesState: 'ready', pictures: { 'query-2.png': uri } }), PAGE);
  assert.match(html, /<td><code>Ancestor\(Alice, x\)\?<\/code><\/td><td class="answer">2 answers<\/td>/);
  assert.match(html, /<table class="answers"><thead><tr><th>x<\/th><\/tr><\/thead><tbody><tr><td>Bob<\/td><\/tr><tr><td>&lt;Carol&gt;<\/td>/);
  assert.match(html, /<code>Y\?<\/code>.*data:image\/png;base64,AQID/s);
});

test('a failed run, an empty panel, and the graph of Fuse: Explain', () => {
  const failed = panelHtml(state({ run: { ok: false, error: 'good.fuse: line 2: <boom>' } }), PAGE);
  assert.match(failed, /<p class="error">Fuse: good\.fuse: line 2: &lt;boom&gt;<\/p>/);
  assert.match(panelHtml(emptyState(), PAGE), /Run a program \(Fuse: Run\)/);
  const running = panelHtml(state({ running: 'Running good.fuse on cpu (numpy)…' }), PAGE);
  assert.match(running, /data-running="yes"/);
  assert.match(running, /<p class="note pending running">Running good\.fuse on cpu \(numpy\)…<\/p>/);
  assert.match(running, /<h3>Y<\/h3>/);  // the last results stay below
  assert.match(panelHtml(state(), PAGE), /data-running="no"/);
  const drawing = panelHtml({ ...emptyState(), program: 'good.fuse', graph: { program: 'good.fuse' } }, PAGE);
  assert.match(drawing, /data-graph="pending"/);
  const graph = panelHtml(state({ graph: { program: 'good.fuse', uri: 'data:image/svg+xml;base64,AA==' } }), PAGE);
  assert.match(graph, /<h2 id="program-graph-title">Program graph/);
  assert.match(graph, /<img class="graph" src="data:image\/svg\+xml;base64,AA==" alt="dataflow graph of good.fuse">/);
  assert.match(graph, /data-graph="ready"/);
});

test('the trace: per-equation bars and the fixpoint iterations', () => {
  assert.equal(milliseconds(0.004), '4 ms');
  assert.equal(milliseconds(0.00001234), '0.0123 ms');
  assert.equal(milliseconds(1.2044), '1,204 ms');
  const chart = equationChart(TRACE.equations);
  assert.equal((chart.match(/<rect class="trace-bar/g) || []).length, 2);
  assert.match(chart, /<rect class="trace-bar recursive" x="130" y="\d+" width="240"/);  // the longest
  assert.match(chart, /<title>Ancestor: 4 ms, shape \(3, 3\), 3 non-zeros, recursive<\/title>/);
  const many = equationChart(Array.from({ length: MAX_BARS + 5 }, (_, i) => ({ tensor: `T${i}`, seconds: 0.001, shape: [] })));
  assert.match(many, /and 5 more equations/);
  const rounds = fixpointChart(TRACE.fixpoints[0]);
  assert.match(rounds, /fixpoint of Ancestor \(semi-naive\): 3 iterations, 2\.5 ms/);
  assert.equal((rounds.match(/<rect class="trace-round"/g) || []).length, 3);
  assert.match(rounds, /iteration 2: 1 facts added/);
  const html = panelHtml(state({ run: { ...RUN, trace: TRACE } }), PAGE);
  assert.match(html, /<h2>Trace<\/h2>/);
  assert.match(html, /time per equation \(2, 4\.1 ms in all\)/);
  assert.doesNotMatch(panelHtml(state(), PAGE), /<h2>Trace/);
  assert.equal(traceHtml(undefined), '');
});

test('names are escaped, and picture file names follow the server', () => {
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  assert.equal(pictureStem('Attn'), 'Attn');
  assert.equal(pictureStem('../x y'), '_x_y');
});

const W = { shape: [3], dtype: 'float32', size: 3, min: -2, max: 1, mean: -0.2, std: 1.2, nonfinite: 0, nonzeros: 3,
  preview: [1, -2, 0.5], truncated: false };
const TRAINING = {
  ok: true, program: 'reg.fuse', backend: 'torch', device: 'cpu', loss: 'L', elapsed_ms: 812, first_step: 0, steps: 4,
  initial_loss: 8, final_loss: 0.5,
  history: [{ step: 1, loss: 8, seconds: 0.01 }, { step: 2, loss: 4, seconds: 0.02, validation: 5 },
    { step: 3, loss: 1, seconds: 0.03 }, { step: 4, loss: 0.5, seconds: 0.04, validation: 0.75 }],
  validation: [{ step: 2, loss: 5 }, { step: 4, loss: 0.75 }],
  params: { W }, checkpoint: '/tmp/out/reg.safetensors', options: { optimizer: 'adam', lr: 0.05 },
  message: 'Trained reg.fuse on cpu (torch): L 8 -> 0.5 in 4 steps, 812 ms',
};

test('the loss curve: one line through every step, validation losses as dots', () => {
  const svg = lossChart(TRAINING.history);
  assert.match(svg, /<p class="trace-title">loss per step \(4 points\)<\/p>/);
  assert.match(svg, /<svg class="trace-chart loss-chart" role="img"/);
  const points = svg.match(/<polyline class="loss-line" points="([^"]+)"/)[1].split(' ').map((p) => p.split(',').map(Number));
  assert.equal(points.length, 4);
  // steps left to right; a falling loss goes down the chart (SVG y grows downwards)
  assert.ok(points.every((p, i) => i === 0 || (p[0] > points[i - 1][0] && p[1] > points[i - 1][1])));
  assert.equal((svg.match(/<circle class="loss-validation"/g) || []).length, 2);
  assert.match(svg, /step 4: validation loss 0\.75/);
  assert.match(svg, /final loss 0\.5 at step 4/);
  assert.doesNotMatch(svg, /style=|NaN/);
  // a loss falling by orders of magnitude is drawn on a log scale; a non-finite one is left out
  const steep = lossChart([{ step: 1, loss: 1000 }, { step: 2, loss: 'nan' }, { step: 3, loss: 0.01 }]);
  assert.match(steep, /loss per step \(2 points, log scale\)/);
  assert.doesNotMatch(steep, /NaN/);
  assert.match(lossChart([{ step: 1, loss: 'inf' }]), /no finite loss to draw/);
});

test('a training in the panel: final loss, the curve, params and checkpoint; failures in words', () => {
  const html = mainHtml({ ...emptyState(), program: 'reg.fuse', training: TRAINING, runCount: 0 });
  assert.match(html, /<h2>Training<\/h2><section class="training">/);
  assert.match(html, /on cpu \(torch\) in 812 ms · steps 0 to 4 · adam, lr 0\.05/);
  assert.match(html, /loss <code>L<\/code>: 8 → <span class="value">0\.5<\/span> · validation <span class="value">0\.75<\/span>/);
  assert.match(html, /class="loss-line"/);
  assert.match(html, /<section class="param" data-name="W"><h3>W<\/h3>/);
  assert.match(html, /checkpoint <code>\/tmp\/out\/reg\.safetensors<\/code>/);
  assert.doesNotMatch(html, /Run a program/);
  // with a run of the same program, the training stays above it
  const both = mainHtml({ ...state(), training: TRAINING });
  assert.ok(both.indexOf('<h2>Training</h2>') < both.indexOf('<h2>Exports</h2>'));
  const refused = trainingHtml({ ok: false, error: 'reg.fuse: training needs gradients, which the numpy backend does not compute' });
  assert.match(refused, /<p class="error">Fuse: reg\.fuse: training needs gradients/);
  assert.match(trainingHtml({ ok: false, cancelled: true }), /the training was cancelled/);
  assert.match(trainingHtml({ ...TRAINING, history: [] }), /no steps were taken/);
  assert.match(trainingHtml({ ...TRAINING, loss: '<L>' }), /<code>&lt;L&gt;<\/code>/);
});

test('a small tensor export shows its cells, each with the index its why asks for', () => {
  const m = { shape: [2, 3], dtype: 'float32', size: 6, min: 0, max: 5, mean: 2.5, std: 1.7, nonfinite: 0,
    nonzeros: 5, preview: [0, 1, 2, 3, 4, 5], truncated: false };
  const page = mainHtml({ ...emptyState(), run: { ...RUN, outputs: { Y, M: m } } });
  const section = page.slice(page.indexOf('data-name="M"'));
  assert.match(section, /<table class="cells"><tbody><tr><td data-index="0, 0" title="why 0, 0">0<\/td>/);
  assert.match(section, /<td data-index="1, 2" title="why 1, 2">5<\/td><\/tr><\/tbody><\/table>/);
  const y = page.slice(page.indexOf('data-name="Y"'), page.indexOf('data-name="M"'));
  assert.match(y, /<td data-index="1" title="why 1">4<\/td>/);
  // a tensor with more values than its preview, or more than MAX_CELLS, shows statistics only
  const big = { ...m, shape: [10, 10], size: 100, preview: m.preview, truncated: true };
  const none = mainHtml({ ...emptyState(), run: { ...RUN, outputs: { B: big } } });
  assert.doesNotMatch(none, /class="cells"/);
});
