'use strict';
// Grammar tests: tokenize sample Fuse text with vscode-textmate + vscode-oniguruma
// (what VS Code itself uses) and assert the scopes of each construct.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { tokenize, ROOT } = require('./tokenize');

const FIXTURE = fs.readFileSync(path.join(__dirname, 'fixtures', 'constructs.fuse'), 'utf8');
const EXAMPLES = path.join(ROOT, '..', '..', 'examples');
const BUILTINS = ['step', 'relu', 'tanh', 'exp', 'log', 'sqrt', 'abs', 'sin', 'cos', 'sig', 'gelu',
  'pow', 'softmax', 'lnorm', 'concat', 'topk', 'causal_mask', 'even', 'odd', 'const', 'max', 'min',
  'select', 'reduce'];

let tokensPromise;
function fixtureTokens() {
  tokensPromise = tokensPromise || tokenize(FIXTURE);
  return tokensPromise;
}

/** The line number of the first fixture line that starts with `prefix`. */
function lineOf(prefix) {
  const i = FIXTURE.split('\n').findIndex((l) => l.startsWith(prefix));
  assert.notEqual(i, -1, `no fixture line starts with ${JSON.stringify(prefix)}`);
  return i;
}

/** The nth token on a line whose text is exactly `text`. */
function token(tokens, line, text, nth = 0) {
  const found = tokens.filter((t) => t.line === line && t.text === text);
  assert.ok(found.length > nth,
    `line ${line}: no token ${JSON.stringify(text)} (#${nth}); tokens: ` +
    JSON.stringify(tokens.filter((t) => t.line === line).map((t) => t.text)));
  return found[nth];
}

/** Assert that token `text` (the nth on the line starting with `prefix`) has every scope given. */
async function expectScopes(prefix, text, scopes, nth = 0) {
  const tokens = await fixtureTokens();
  const t = token(tokens, lineOf(prefix), text, nth);
  for (const scope of [].concat(scopes)) {
    assert.ok(t.scopes.includes(scope),
      `${JSON.stringify(text)} on "${prefix}...": expected ${scope}, got ${t.scopes.join(' ')}`);
  }
  return t;
}

async function expectNoScope(prefix, text, scope, nth = 0) {
  const tokens = await fixtureTokens();
  const t = token(tokens, lineOf(prefix), text, nth);
  assert.ok(!t.scopes.some((s) => s.startsWith(scope)),
    `${JSON.stringify(text)} on "${prefix}...": unexpected ${scope} in ${t.scopes.join(' ')}`);
}

test('the grammar file is the one package.json contributes', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const grammar = pkg.contributes.grammars.find((g) => g.language === 'fuse');
  const raw = JSON.parse(fs.readFileSync(path.join(ROOT, grammar.path), 'utf8'));
  assert.equal(raw.scopeName, 'source.fuse');
  assert.equal(grammar.scopeName, 'source.fuse');
  // every include names a repository rule
  const names = new Set(Object.keys(raw.repository));
  const walk = (node) => {
    if (Array.isArray(node)) { node.forEach(walk); return; }
    if (node && typeof node === 'object') {
      if (typeof node.include === 'string' && node.include.startsWith('#')) {
        assert.ok(names.has(node.include.slice(1)), `unknown include ${node.include}`);
      }
      Object.values(node).forEach(walk);
    }
  };
  walk(raw);
});

test('comments', async () => {
  await expectScopes('# A sample', '#', ['comment.line.number-sign.fuse', 'punctuation.definition.comment.fuse']);
  await expectScopes('# A sample', ' A sample of every construct the grammar scopes (test/grammar.test.js).',
    'comment.line.number-sign.fuse');
  // a trailing comment, with quotes inside it that do not start a string
  const t = await expectScopes('X[p,d]', ' a source; "quotes" in a comment stay comment', 'comment.line.number-sign.fuse');
  assert.ok(!t.scopes.some((s) => s.startsWith('string')));
  await expectScopes('            relu(W1', ' a statement continues while a bracket is open', 'comment.line.number-sign.fuse');
});

test('strings are file paths, with escapes', async () => {
  await expectScopes('X[p,d]', '"', ['string.quoted.double.fuse', 'punctuation.definition.string.begin.fuse']);
  await expectScopes('X[p,d]', 'data/attention_x.npy', ['string.quoted.double.fuse', 'meta.path.fuse']);
  await expectScopes('X[p,d]', '"', ['string.quoted.double.fuse', 'punctuation.definition.string.end.fuse'], 1);
  // a sink: the path on the left, with an escaped quote
  await expectScopes('"runs/y', 'runs/y', ['string.quoted.double.fuse', 'meta.path.fuse']);
  await expectScopes('"runs/y', '\\"', ['string.quoted.double.fuse', 'constant.character.escape.fuse']);
  await expectScopes('"runs/y', 'q.npz', 'string.quoted.double.fuse');
  await expectScopes('"runs/y', '=', 'keyword.operator.assignment.fuse');
  // an unterminated string stops at the end of its line
  await expectScopes('Y[i] = "unterminated', 'unterminated', 'string.quoted.double.fuse');
  const tokens = await fixtureTokens();
  const last = lineOf('Y[i] = "unterminated') + 1;
  assert.deepEqual(token(tokens, last, 'Z').scopes, ['source.fuse', 'variable.other.tensor.fuse']);
});

test('numbers: integers, decimals, exponents', async () => {
  await expectScopes('axis d', '64', 'constant.numeric.integer.fuse');
  for (const n of ['0.2', '1.9', '0.7', '3e2', '1e-5', '.5']) {
    await expectScopes('W = const', n, 'constant.numeric.float.fuse');
  }
  // the leading minus is the unary operator, not part of the number
  await expectScopes('W = const', '-', 'keyword.operator.arithmetic.fuse');
  await expectScopes('T[i] = topk', '1e-5', 'constant.numeric.float.fuse');
  await expectScopes('X[0:4', '0', 'constant.numeric.integer.fuse');
  // digits inside a name are not a number
  await expectScopes('Y[i] = relu', 'W2', 'variable.other.tensor.fuse');
});

test('tensor names: capitalised identifiers before [ (dense) and bare names', async () => {
  await expectScopes('X[p,d]', 'X', 'variable.other.tensor.fuse');
  await expectScopes('Comp[p', 'Comp', ['meta.tensor.dense.fuse', 'variable.other.tensor.fuse']);
  await expectScopes('Comp[p', 'Query', 'variable.other.tensor.fuse');
  await expectScopes('Comp[p', 'Key', 'variable.other.tensor.fuse');
  await expectScopes('Comp[p', 'Dk', 'variable.other.tensor.fuse'); // a scalar
  await expectScopes('X[i,*t+1]', 'T', 'variable.other.tensor.fuse'); // sig's temperature
  await expectScopes('Y?', 'Y', 'variable.other.tensor.fuse');
  await expectScopes('Comp[p', '[', 'punctuation.section.brackets.begin.fuse');
  await expectScopes('Comp[p', ']', 'punctuation.section.brackets.end.fuse');
});

test('Boolean relations: Name( ... ) with symbols and variables', async () => {
  await expectScopes('Parent(Alice', 'Parent', ['meta.tensor.relation.fuse', 'entity.name.type.relation.fuse']);
  await expectScopes('Parent(Alice', 'Alice', 'constant.other.symbol.fuse');
  await expectScopes('Parent(Alice', 'Bob', 'constant.other.symbol.fuse');
  await expectScopes('Ancestor(x,z) =', 'Ancestor', 'entity.name.type.relation.fuse', 0);
  await expectScopes('Ancestor(x,z) =', 'Ancestor', 'entity.name.type.relation.fuse', 1);
  await expectScopes('Ancestor(x,z) =', 'Parent', 'entity.name.type.relation.fuse');
  await expectScopes('Ancestor(x,z) =', 'x', 'variable.parameter.index.fuse');
  await expectScopes('Ancestor(Alice, x)?', 'Alice', 'constant.other.symbol.fuse');
  await expectScopes('Ancestor(Alice, x)?', '?', 'keyword.operator.query.fuse');
  await expectScopes('Y?', '?', 'keyword.operator.query.fuse');
});

test('index variables inside brackets, constants and index arithmetic', async () => {
  for (const [prefix, name] of [['X[p,d]', 'p'], ['X[p,d]', 'd'], ['Comp[p', 'dk'], ['M[o]', 'o'],
    ['M[o]', 'b'], ['Pooled[', 'x'], ['X[i,*t+1]', 't']]) {
    await expectScopes(prefix, name, 'variable.parameter.index.fuse');
  }
  // an index used as a value (even(i)), declared by axis, named by reduce
  await expectScopes('T[i] = topk', 'i', 'variable.parameter.index.fuse', 4);
  await expectScopes('axis d', 'd', 'variable.parameter.index.fuse');
  await expectScopes('axis d', 'n', 'variable.parameter.index.fuse');
  await expectScopes('S[o] = reduce', 'b', 'variable.parameter.index.fuse', 0);
  // an integer constant, an offset, division, a slice, a virtual index
  await expectScopes('X[0:4', ':', 'keyword.operator.slice.fuse', 0);
  await expectScopes('X[0:4', ':', 'keyword.operator.slice.fuse', 1);
  await expectScopes('X[0:4', 'Obs', 'variable.other.tensor.fuse');
  await expectScopes('Pooled[', '/', 'keyword.operator.arithmetic.fuse');
  await expectScopes('X[i,*t+1]', '*', 'keyword.operator.virtual-index.fuse');
  await expectScopes('X[i,*t+1]', '+', 'keyword.operator.arithmetic.fuse');
  await expectScopes('X[i,*t+1]', '1', 'constant.numeric.integer.fuse');
});

test('dotted axes and primes', async () => {
  const dotted = await expectScopes('Comp[p', '.', ['meta.index.dotted.fuse', 'keyword.operator.dotted-axis.fuse']);
  assert.ok(dotted.scopes.includes('meta.tensor.dense.fuse'));
  await expectScopes('Comp[p', 'p', ['meta.index.dotted.fuse', 'variable.parameter.index.fuse'], 1);
  // p' : the prime belongs to the index name
  await expectScopes('Comp[p', "'", ['variable.parameter.index.fuse', 'punctuation.definition.prime.fuse'], 0);
  await expectScopes('Comp[p', "'", ['variable.parameter.index.fuse', 'punctuation.definition.prime.fuse'], 1);
  await expectScopes('K[i,i', "'", ['variable.parameter.index.fuse', 'punctuation.definition.prime.fuse'], 0);
  // primes on tensor names
  await expectScopes('R[n,d]', "'", ['variable.other.tensor.fuse', 'punctuation.definition.prime.fuse'], 0);
  await expectScopes('R[n,d]', "''", ['variable.other.tensor.fuse', 'punctuation.definition.prime.fuse']);
  await expectScopes('R[n,d]', 'X', 'variable.other.tensor.fuse');
  // a decimal point is not a dotted axis
  await expectNoScope('W = const', '.5', 'keyword.operator.dotted-axis');
});

test('builtins', async () => {
  const tokens = await fixtureTokens();
  for (const name of BUILTINS) {
    const t = tokens.find((x) => x.text === name && x.scopes.includes('support.function.builtin.fuse'));
    assert.ok(t, `builtin ${name} is not scoped support.function.builtin.fuse`);
    assert.ok(t.scopes.some((s) => s.startsWith('meta.function-call')), name);
  }
  await expectScopes('S[o] = reduce', 'max', 'support.constant.reduce-op.fuse');
  await expectScopes('T[i] = topk', 'max', 'support.function.builtin.fuse');
  // keyword arguments
  await expectScopes('T[i] = topk', 'k', 'variable.other.property.keyword-argument.fuse');
  await expectScopes('T[i] = topk', 'eps', 'variable.other.property.keyword-argument.fuse');
  await expectScopes('T[i] = topk', 'axis', 'variable.other.property.keyword-argument.fuse');
  await expectNoScope('T[i] = topk', 'axis', 'keyword.other');
  // a builtin name that is not called is not a builtin
  const plain = await tokenize('Y[max] = X[exp]');
  assert.ok(!plain.some((t) => t.scopes.includes('support.function.builtin.fuse')));
});

test('keywords export, axis, param, let, train, not; logical operators', async () => {
  await expectScopes('export Attn', 'export', 'keyword.other.export.fuse');
  await expectScopes('export Attn', 'Attn', 'variable.other.tensor.fuse');
  await expectScopes('export Attn', 'Comp', 'variable.other.tensor.fuse');
  await expectScopes('axis d', 'axis', 'keyword.other.axis.fuse');
  await expectScopes('param W', 'param', 'keyword.other.param.fuse');
  await expectScopes('param W', 'W', 'variable.other.tensor.fuse');
  await expectScopes('let Z', 'let', 'keyword.other.let.fuse');
  await expectScopes('G[i] = A[i] < B[i]', '<', 'keyword.operator.comparison.fuse');
  await expectScopes('H[i] = A[i] && B[i]', '&&', 'keyword.operator.logical.fuse');
  await expectScopes('H2[i] = A[i] when', '!', 'keyword.operator.logical.fuse');
  await expectScopes('H2[i] = A[i] when', '||', 'keyword.operator.logical.fuse');
  await expectScopes('H2[i] = A[i] when', '!=', 'keyword.operator.comparison.fuse');
  await expectScopes('{ let h', '{', 'punctuation.section.block.fuse');
  await expectScopes('{ let h', 'let', 'keyword.other.let.fuse');
  await expectScopes('{ let h', 'Bl', 'variable.other.tensor.fuse');
  await expectNoScope('{ let h', '}', 'invalid');
  // negation (LANGUAGE.md §13) and train: keywords, not an index variable or a tensor
  await expectScopes('Safe(x) = Node(x) not', 'not', 'keyword.operator.logical.not.fuse');
  await expectNoScope('Safe(x) = Node(x) not', 'not', 'variable');
  await expectScopes('train Loss', 'train', 'keyword.other.train.fuse');
  // a padding instead of an extent (the server's semantic tokens call it a keyword too)
  await expectScopes('axis pw = valid', 'valid', 'keyword.other.padding.fuse');
  await expectScopes('axis pw = valid', 'same', 'keyword.other.padding.fuse');
  await expectScopes('axis pw = valid', 'ph', 'variable.parameter.index.fuse');
  await expectScopes('train Loss', 'Loss', 'variable.other.tensor.fuse');
  await expectScopes('notes = 1e+3', 'notes', 'variable.parameter.index.fuse');
  await expectScopes('notes = 1e+3', 'not_x', 'variable.parameter.index.fuse');
  await expectScopes('notes = 1e+3', '1e+3', 'constant.numeric.float.fuse');
  // a keyword inside a longer name is a name
  const t = await tokenize('exported = axis2 + params');
  assert.ok(!t.some((x) => x.scopes.some((s) => s.startsWith('keyword.other'))), JSON.stringify(t));
});

test('functions and choices: fn, case, when, default, select, ->, braces', async () => {
  await expectScopes('fn dense', 'fn', 'keyword.other.fn.fuse');
  await expectScopes('fn dense', 'dense', 'entity.name.function.fuse');
  await expectScopes('fn dense', '->', 'keyword.operator.arrow.fuse');
  await expectScopes('fn dense', '{', 'punctuation.section.block.fuse');
  await expectScopes('C[i] = case', 'case', 'keyword.control.choice.fuse');
  await expectScopes('C[i] = case', 'default', 'keyword.control.choice.fuse');
  await expectScopes('C[i] = case', 'select', 'support.function.builtin.fuse');
  await expectScopes('C[i] = case', '->', 'keyword.operator.arrow.fuse', 1);
  await expectScopes('Gd[i] = A', 'when', 'keyword.control.choice.fuse');
  await expectNoScope('fn dense', '->', 'invalid');
  await expectNoScope('C[i] = case', '->', 'invalid');
  await expectNoScope('C[i] = case', '{', 'invalid');
});

test('imports: import "file" as ns, and ns::Name', async () => {
  await expectScopes('import "lib', 'import', 'keyword.control.import.fuse');
  await expectScopes('import "lib', '"lib/graph.fuse"', 'string.quoted.double.fuse');
  await expectScopes('import "lib', 'as', 'keyword.control.as.fuse');
  await expectScopes('import "lib', 'graph', 'entity.name.namespace.fuse');
  await expectScopes('From(x) = graph', 'graph', 'entity.name.namespace.fuse');
  await expectScopes('From(x) = graph', '::', 'punctuation.separator.namespace.fuse');
  await expectScopes('From(x) = graph', 'Linked', 'entity.name.type.relation.fuse');
  await expectScopes('From(x) = graph', 'reach', 'entity.name.function.fuse');
  await expectScopes('From(x) = graph', 'h', 'entity.name.namespace.fuse');
  await expectScopes('From(x) = graph', 'W', 'variable.other.tensor.fuse');
  await expectNoScope('From(x) = graph', '::', 'invalid');
  await expectNoScope('import "lib', 'import', 'invalid');
});

test('operators: = += max= min= avg= ^ ** and arithmetic', async () => {
  await expectScopes('X[p,d]', '=', 'keyword.operator.assignment.fuse');
  await expectScopes('Y[i] += B', '+=', 'keyword.operator.assignment.accumulate.fuse');
  await expectScopes('M[o] max=', 'max=', 'keyword.operator.assignment.projection.fuse');
  await expectScopes('M2[o] min=', 'min=', 'keyword.operator.assignment.projection.fuse');
  await expectScopes('M2[o] min=', 'avg=', 'keyword.operator.assignment.projection.fuse');
  await expectScopes('M2[o] min=', ';', 'punctuation.terminator.statement.fuse');
  await expectScopes('K[i,i', '^', 'keyword.operator.arithmetic.power.fuse');
  await expectScopes('K[i,i', '**', 'keyword.operator.arithmetic.power.fuse');
  await expectScopes('K[i,i', '-', 'keyword.operator.arithmetic.fuse', 0);
  await expectScopes('Comp[p', '/', 'keyword.operator.arithmetic.fuse');
  await expectScopes('X[i,*t+1]', ',', 'punctuation.separator.comma.fuse');
});

test('a statement continues over lines while a bracket is open', async () => {
  const t = await expectScopes('            relu(W1', 'relu', 'support.function.builtin.fuse');
  assert.equal(t.scopes.filter((s) => s === 'meta.function-call.fuse').length, 2);
  await expectScopes('            relu(W1', 'h', 'variable.parameter.index.fuse');
});

test('the examples tokenize cleanly: every name scoped, every bracket closed', async () => {
  const files = fs.readdirSync(EXAMPLES).filter((f) => f.endsWith('.fuse'));
  assert.ok(files.length >= 5, `expected the examples in ${EXAMPLES}`);
  for (const file of files) {
    const text = fs.readFileSync(path.join(EXAMPLES, file), 'utf8');
    // a sentinel line after the program: at the top level only if every bracket closed
    const tokens = await tokenize(`${text.replace(/\n*$/, '')}\nZzSentinel = 1`);
    const last = tokens.filter((t) => t.text === 'ZzSentinel');
    assert.equal(last.length, 1, file);
    assert.deepEqual(last[0].scopes, ['source.fuse', 'variable.other.tensor.fuse'], file);
    for (const t of tokens) {
      if (/[A-Za-z_0-9"#]/.test(t.text)) {
        assert.ok(t.scopes.length > 1, `${file}:${t.line + 1}: ${JSON.stringify(t.text)} has no scope`);
      }
      assert.ok(!t.scopes.some((s) => s.startsWith('invalid')), `${file}:${t.line + 1}: ${JSON.stringify(t.text)} invalid`);
    }
  }
});
