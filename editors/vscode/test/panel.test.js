'use strict';
// The Fuse Results panel's page and trace charts (pure; compiled by `npm test`).
const test = require('node:test');
const assert = require('node:assert/strict');
const { contentSecurityPolicy, emptyState, mainHtml, makeNonce, panelHtml, pictureStem } = require('../out/panelHtml');
const { equationChart, fixpointChart, milliseconds, traceHtml, MAX_BARS } = require('../out/traceChart');
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
