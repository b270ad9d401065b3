'use strict';
// The extension manifest and language configuration: what VS Code reads
// before any code of the extension runs.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');

const ROOT = path.join(__dirname, '..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));

test('identity, entry point and activation', () => {
  assert.equal(pkg.name, 'fuse-lang');
  assert.ok(pkg.publisher);
  assert.equal(pkg.main, './out/extension.js');
  assert.deepEqual(pkg.activationEvents, ['onLanguage:fuse']);
});

test('the .fuse language with its configuration', () => {
  const lang = pkg.contributes.languages.find((l) => l.id === 'fuse');
  assert.ok(lang);
  assert.deepEqual(lang.extensions, ['.fuse']);
  const config = JSON.parse(fs.readFileSync(path.join(ROOT, lang.configuration), 'utf8'));
  assert.equal(config.comments.lineComment, '#');
  assert.deepEqual(config.brackets, [['[', ']'], ['(', ')'], ['{', '}']]);
  const opens = config.autoClosingPairs.map((p) => p.open);
  for (const open of ['[', '(', '{', '"']) {
    assert.ok(opens.includes(open), `auto-closing ${open}`);
  }
  // ' is the prime of p', never a quote
  assert.ok(!opens.includes("'"));
  const word = new RegExp(config.wordPattern, 'g');
  assert.deepEqual("Comp[p,p'.] = x'' + 1e-5".match(word), ['Comp', 'p', "p'", "x''", '1e-5']);
});

test('commands Fuse: Run, Fuse: Train and Fuse: Explain', () => {
  const commands = Object.fromEntries(pkg.contributes.commands.map((c) => [c.command, c]));
  assert.equal(`${commands['fuse.run'].category}: ${commands['fuse.run'].title}`, 'Fuse: Run');
  assert.equal(`${commands['fuse.train'].category}: ${commands['fuse.train'].title}`, 'Fuse: Train');
  assert.ok(pkg.contributes.menus.commandPalette.some((m) => m.command === 'fuse.train'));
  assert.equal(`${commands['fuse.explain'].category}: ${commands['fuse.explain'].title}`, 'Fuse: Explain');
});

test('settings', () => {
  const props = pkg.contributes.configuration.properties;
  assert.equal(props['fuse.server.path'].default, 'fuse-lsp');
  assert.equal(props['fuse.server.python'].type, 'string');
  assert.equal(props['fuse.backend'].default, 'numpy');
  assert.equal(props['fuse.device'].default, 'cpu');
  assert.equal(props['fuse.runTrace'].default, false);  // the server's runTrace option
  // the server's train options (fuse_lsp/state.py), with its defaults
  assert.deepEqual(props['fuse.trainOptimizer'].enum, ['sgd', 'adam', 'adamw']);
  assert.equal(props['fuse.trainOptimizer'].default, 'adam');
  assert.equal(props['fuse.trainLearningRate'].default, 0.01);
  assert.equal(props['fuse.trainSteps'].default, 100);
  assert.equal(props['fuse.trainBatch'].default, '');
  assert.equal(props['fuse.trainSeed'].default, 0);
  assert.deepEqual(props['fuse.trace.server'].enum, ['off', 'messages', 'verbose']);
});

test('versions are pinned and consistent', () => {
  for (const [name, version] of Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })) {
    assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is not pinned`);
    assert.equal(lock.packages[`node_modules/${name}`].version, version, `${name} in package-lock.json`);
  }
  // @types/vscode may not be newer than the engine (vsce refuses to package)
  const engine = pkg.engines.vscode.replace(/^\^/, '');
  assert.equal(pkg.devDependencies['@types/vscode'], engine);
  const client = lock.packages['node_modules/vscode-languageclient'];
  assert.equal(client.engines.vscode, pkg.engines.vscode, 'vscode-languageclient needs this engine');
});
