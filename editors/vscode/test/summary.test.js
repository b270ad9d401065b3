'use strict';
// The extension's pure helpers (compiled by `npm run compile`; `npm test` compiles first).
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  formatRunResult, formatTrainResult, runMessage, runTargets, serverCommand, shapeText, trainMessage, trainTargets,
  tupleText, valueText,
} = require('../out/summary');

const SUMMARY = {
  ok: true, program: 'a.fuse', backend: 'numpy', device: 'cpu', elapsed_ms: 12.3, target: null,
  sinks: [],
  outputs: { C: { shape: [3, 3], dtype: 'float32', size: 9, min: 1, max: 28, mean: 8.333333, std: 8.3,
    nonfinite: 0, preview: [1, 2, 'nan', 4, 5, 6, 7, 8], truncated: true } },
  queries: [{ text: 'Ancestor(Alice, x)?', tensor: 'Ancestor', free: ['x'], boolean: true,
    answer: '2 answers', tuples: [['Bob'], ['Carol']], shape: [5], dtype: 'float32', size: 5,
    min: 0, max: 1, mean: 0.4, std: 0.49, nonfinite: 0, preview: [0, 1, 1, 0, 0], truncated: false }],
  message: 'Ran a.fuse on cpu (numpy): C (3, 3), Ancestor(Alice, x)? 2 answers in 12 ms',
};

test('a run summary as text', () => {
  const text = formatRunResult(SUMMARY).join('\n');
  assert.match(text, /^Ran a\.fuse on cpu \(numpy\)/);
  assert.match(text, /program a\.fuse on cpu \(numpy\), 12\.3 ms/);
  assert.match(text, /\nC\n {2}shape \(3, 3\), float32, 9 values/);
  assert.match(text, /mean 8\.33333/);
  assert.match(text, /preview \[1, 2, nan, 4, 5, 6, 7, 8, \.\.\.\]/);
  assert.match(text, /Ancestor\(Alice, x\)\? {2}2 answers\n {2}\(Bob\)\n {2}\(Carol\)/);
});

// a relation among the outputs, as the server sends it (fuse_lang/ide/run_summary.py)
const ANCESTOR = { shape: [4, 4], dtype: 'float32', size: 16, min: 0, max: 1, mean: 0.375, std: 0.48, nonfinite: 0,
  nonzeros: 6, preview: [0, 1, 1, 1, 0, 0, 1, 1], truncated: true, relation: true, count: 6,
  tuples: [['Alice', 'Bob'], ['Alice', 'Carol'], ['Alice', 'Dave']],
  tuple_texts: ['(Alice, Bob)', '(Alice, Carol)', '(Alice, Dave)'] };

test('a relation output as its count and tuples, not a 0/1 preview', () => {
  const text = formatRunResult({ ...SUMMARY, outputs: { Ancestor: ANCESTOR } }).join('\n');
  assert.match(text, /\nAncestor {2}6 tuples\n {2}\(Alice, Bob\)\n {2}\(Alice, Carol\)\n {2}\(Alice, Dave\)\n {2}\.\.\. and 3 more\n/);
  assert.doesNotMatch(text, /preview \[0, 1/);
  // without the server's texts, values are written as a program writes them
  const likes = { ...ANCESTOR, shape: [2, 3, 2], count: 2, tuples: [['Alice', 'ann', 7], ['bob', 'x "y"', 0.5]],
    tuple_texts: undefined };
  const lines = formatRunResult({ ...SUMMARY, outputs: { Likes: likes } });
  assert.deepEqual(lines.slice(lines.indexOf('Likes  2 tuples'), lines.indexOf('Likes  2 tuples') + 3),
    ['Likes  2 tuples', '  (Alice, "ann", 7)', '  ("bob", "x \\"y\\"", 0.5)']);
  assert.ok(!lines.some((l) => l.includes('and 0 more')));
  // a 0-ary relation: yes or no
  const fact = { ...ANCESTOR, shape: [], size: 1, count: 1, tuples: [[]], tuple_texts: ['()'] };
  assert.ok(formatRunResult({ ...SUMMARY, outputs: { Done: fact } }).includes('Done  yes'));
  assert.equal(valueText('Alice'), 'Alice');
  assert.equal(valueText('ann'), '"ann"');
  assert.equal(valueText('A b'), '"A b"');
  assert.equal(valueText('1'), '"1"');
  assert.equal(valueText(7), '7');
  assert.equal(valueText('a\\b'), '"a\\\\b"');
  assert.equal(tupleText(['Bob']), '(Bob)');
});

test('what a run left out for an error', () => {
  const text = formatRunResult({ ...SUMMARY, not_run: [
    { what: 'D', line: 8, reason: '`Nope` is not defined [undefined-tensor]' },
    { what: 'E', line: 9, reason: 'not needed by the target' }] }).join('\n');
  assert.match(text, /\nnot run \(errors\):\n {2}D \(line 8\): `Nope` is not defined \[undefined-tensor\]$/);
  assert.doesNotMatch(text, /E \(line 9\)/);
});

test('failures and cancels', () => {
  assert.equal(runMessage({ ok: false, error: 'a.fuse: line 2, column 8: boom' }), 'Fuse: a.fuse: line 2, column 8: boom');
  assert.equal(runMessage({ ok: false, cancelled: true }), 'Fuse: the run was cancelled');
  assert.deepEqual(formatRunResult(null), ['Fuse: the server gave no answer']);
});

test('shapes', () => {
  assert.equal(shapeText([]), '()');
  assert.equal(shapeText([4]), '(4,)');
  assert.equal(shapeText([2, 3]), '(2, 3)');
});

test('run targets from the server\'s "Run on ..." code actions', () => {
  const action = (backend, device) => ({ title: `Run on ${device} (${backend})`, kind: 'source.fuse.run',
    command: { title: 'x', command: 'fuse.run', arguments: ['file:///a.fuse', { backend, device }] } });
  const actions = [action('numpy', 'cpu'), action('torch', 'cpu'), action('torch', 'cuda'), action('torch', 'cuda'),
    { title: 'a quick fix', kind: 'quickfix', edit: {} }];
  assert.deepEqual(runTargets(actions), [
    { backend: 'numpy', device: 'cpu' }, { backend: 'torch', device: 'cpu' }, { backend: 'torch', device: 'cuda' }]);
  assert.deepEqual(runTargets(actions, { backend: 'torch', device: 'cuda' })[0], { backend: 'torch', device: 'cuda' });
  assert.deepEqual(runTargets([]), [{ backend: 'numpy', device: 'cpu' }]);
  assert.deepEqual(runTargets(null), [{ backend: 'numpy', device: 'cpu' }]);
});

test('training targets from the server\'s "Train on ..." code actions, and a training as text', () => {
  const action = (command, backend, device) => ({ title: 'x', kind: 'source.fuse.train',
    command: { title: 'x', command, arguments: ['file:///a.fuse', { backend, device }] } });
  const actions = [action('fuse.run', 'numpy', 'cpu'), action('fuse.train', 'torch', 'cpu'),
    action('fuse.train', 'jax', 'cpu')];
  assert.deepEqual(trainTargets(actions), [{ backend: 'torch', device: 'cpu' }, { backend: 'jax', device: 'cpu' }]);
  assert.deepEqual(trainTargets(actions, { backend: 'jax', device: 'cpu' })[0], { backend: 'jax', device: 'cpu' });
  assert.deepEqual(trainTargets([action('fuse.run', 'numpy', 'cpu')]), []);  // no fallback: numpy cannot train
  const lines = formatTrainResult({ ok: true, program: 'reg.fuse', backend: 'torch', device: 'cpu', loss: 'L',
    first_step: 0, steps: 100, initial_loss: 8, final_loss: 0.012, validation: [{ step: 100, loss: 0.02 }],
    params: { B: { shape: [], dtype: 'float32', size: 1, min: 0.3, max: 0.3, mean: 0.3, std: 0, nonfinite: 0,
      preview: [0.3], truncated: false } }, checkpoint: '/tmp/c.safetensors', options: { optimizer: 'adam', batch: null },
    message: 'Trained reg.fuse' });
  assert.deepEqual(lines.slice(0, 4), ['Trained reg.fuse', 'program reg.fuse on cpu (torch), steps 0 to 100, optimizer adam',
    'loss L: 8 -> 0.012', '  validation at step 100: 0.02']);
  assert.ok(lines.includes('param B') && lines.includes('checkpoint: /tmp/c.safetensors'));
  assert.equal(trainMessage({ ok: false, cancelled: true }), 'Fuse: the training was cancelled');
  assert.deepEqual(formatTrainResult({ ok: false, error: 'no loss' }), ['Fuse: no loss']);
});

test('the server command line', () => {
  assert.deepEqual(serverCommand('fuse-lsp', ''), { command: 'fuse-lsp', args: [] });
  assert.deepEqual(serverCommand(undefined, undefined), { command: 'fuse-lsp', args: [] });
  assert.deepEqual(serverCommand('fuse-lsp', '/venv/bin/python'), { command: '/venv/bin/python', args: ['-m', 'fuse_lsp'] });
  assert.deepEqual(serverCommand('~/bin/fuse-lsp', '', '/home/u'), { command: '/home/u/bin/fuse-lsp', args: [] });
  // a setting of the wrong type (VS Code hands it back as written) is left out, and named
  assert.deepEqual(serverCommand(42, undefined), {
    command: 'fuse-lsp', args: [], ignored: ['fuse.server.path = 42 (not a string)'] });
  assert.deepEqual(serverCommand('/bin/fuse-lsp', true), {
    command: '/bin/fuse-lsp', args: [], ignored: ['fuse.server.python = true (not a string)'] });
  assert.deepEqual(serverCommand(['a'], null).command, 'fuse-lsp');
});
