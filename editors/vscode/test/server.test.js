'use strict';
// The compiled extension against the real server, without VS Code: a stub `vscode`
// module (the APIs the extension uses, any other one a no-op proxy) loads
// out/extension.js, which starts `fuse-lsp --stdio` through vscode-languageclient.
// Needs the server: FUSE_LSP (default `fuse-lsp`) and FUSE_PYTHON (default `python3`).
// Run with `npm run test:server`; the real-editor test is separate.
const test = require('node:test');
const assert = require('node:assert/strict');
const os = require('os');
const Module = require('module');
const path = require('path');
const fs = require('fs');
const { URL, pathToFileURL } = require('url');
const messages = [];
const log = (...a) => { if (process.env.FUSE_SMOKE_VERBOSE) console.log('[smoke]', ...a); };

function anything(name) {
  const fn = function () { return anything(name + '()'); };
  return new Proxy(fn, {
    get(t, p) {
      if (p === 'then') return undefined;
      if (p === Symbol.toPrimitive) return () => name;
      if (p === 'dispose') return () => {};
      if (p === Symbol.iterator) return function* () {};
      return anything(name + '.' + String(p));
    },
    construct() { return anything('new ' + name); },
    apply() { return anything(name + '()'); },
  });
}
function stubbed(obj, name) {
  return new Proxy(obj, { get(t, p) { if (p in t) return t[p]; if (p === 'then') return undefined; return anything(name + '.' + String(p)); } });
}
class Uri {
  constructor(scheme, p, query = '') { this.scheme = scheme; this.path = p; this.query = query; this.fsPath = p; this.authority = ''; this.fragment = ''; }
  static file(p) { return new Uri('file', p); }
  static parse(s) { const u = new URL(s); return new Uri(u.protocol.slice(0, -1), decodeURIComponent(u.pathname), u.search.slice(1)); }
  static from(c) { return new Uri(c.scheme, c.path, c.query || ''); }
  static joinPath(u, ...parts) { return new Uri(u.scheme, path.join(u.path, ...parts)); }
  toString() { return this.scheme === 'file' ? pathToFileURL(this.path).href : `${this.scheme}:${this.path}${this.query ? '?' + encodeURIComponent(this.query) : ''}`; }
  with() { return this; }
}
class EventEmitter { constructor() { this.l = []; this.event = (f) => { this.l.push(f); return { dispose() {} }; }; } fire(e) { this.l.forEach((f) => f(e)); } dispose() {} }
class Disposable { constructor(f) { this.f = f; } dispose() { this.f && this.f(); } static from(...d) { return new Disposable(() => d.forEach((x) => x.dispose && x.dispose())); } }
const commands = new Map();
const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'fuse-vscode-'));
const file = path.join(workspace, 'datalog.fuse');
fs.copyFileSync(path.join(__dirname, 'fixtures', 'datalog.fuse'), file);
const text = fs.readFileSync(file, 'utf8');
const lines = text.split('\n');
const doc = {
  uri: Uri.file(file), fileName: file, languageId: 'fuse', version: 1, isClosed: false, isUntitled: false,
  getText: () => text, lineCount: lines.length, eol: 1,
  lineAt: (i) => ({ text: lines[typeof i === 'number' ? i : i.line] }),
};
const channels = {};
// the Fuse Results webview: its options and each page it was given
const webviews = [];
function createWebviewPanel(viewType, title, column, options) {
  const panel = { viewType, title, options, pages: [], listeners: [], visible: true, reveal() {}, dispose() {},
    onDidDispose: () => ({ dispose() {} }) };
  // the page, then each update's <main> (posted to the page's script)
  panel.webview = { cspSource: 'vscode-webview-resource:', asWebviewUri: (u) => Uri.from({ scheme: 'vscode-webview-resource', path: u.path }),
    postMessage: async (m) => { panel.pages.push(m.main); return true; },
    onDidReceiveMessage: (f) => { panel.listeners.push(f); return { dispose() {} }; } };
  Object.defineProperty(panel.webview, 'html', { set(v) { panel.pages.push(v); }, get() { return panel.pages[panel.pages.length - 1]; } });
  webviews.push(panel);
  return panel;
}
const configurationListeners = new Set();
const shownDocuments = [];  // what showTextDocument was given
const providers = {};  // the extension's virtual documents' providers, by scheme
const settings = { 'server.path': process.env.FUSE_LSP || 'fuse-lsp', 'server.python': '', backend: 'numpy', device: 'cpu', allowSinkWrites: false, 'trace.server': 'off' };
const vscode = {
  Uri, EventEmitter, Disposable,
  StatusBarAlignment: { Left: 1, Right: 2 }, ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  ViewColumn: { Beside: -2, Active: -1, One: 1 }, ThemeColor: class { constructor(id) { this.id = id; } },
  MarkdownString: class { constructor(v = '') { this.value = v; } appendMarkdown(s) { this.value += s; return this; } appendText(s) { this.value += s; return this; } appendCodeblock(s) { this.value += '\n```\n' + s + '\n```\n'; return this; } },
  window: stubbed({
    createWebviewPanel,
    createOutputChannel: (name) => (channels[name] = { name, lines: [], append(s) { this.lines.push(s); }, appendLine(s) { this.lines.push(s); }, show() {}, clear() {}, dispose() {}, replace() {} }),
    createStatusBarItem: () => (global.statusItem = { show() {}, hide() {}, dispose() {} }),
    showErrorMessage: async (...a) => { messages.push(['error', a[0]]); log('ERROR MESSAGE', a[0]); },
    showInformationMessage: async (...a) => { messages.push(['info', a[0]]); log('INFO MESSAGE', a[0]); },
    showWarningMessage: async (...a) => { messages.push(['warning', a[0]]); log('WARN MESSAGE', a[0]); },
    setStatusBarMessage: (m) => { log('STATUS MESSAGE', m); return { dispose() {} }; },
    withProgress: (o, f) => f({ report() {} }, { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) }),
    showQuickPick: async (items) => { log('QUICK PICK', items.map((i) => i.label)); return items[0]; },
    activeTextEditor: { document: doc },
    visibleTextEditors: [],
    onDidChangeActiveTextEditor: () => ({ dispose() {} }),
    onDidChangeVisibleTextEditors: () => ({ dispose() {} }),
    showTextDocument: async (d) => { shownDocuments.push(d); return {}; },
  }, 'window'),
  workspace: stubbed({
    getConfiguration: (section) => ({ get: (k, d) => (section === 'fuse' ? settings[k] : section === 'fuse.trace' ? settings['trace.' + k] : undefined) ?? d, has: () => true, inspect: () => undefined }),
    workspaceFolders: [{ uri: Uri.file(workspace), name: 'ws', index: 0 }],
    textDocuments: [doc],
    openTextDocument: async (u) => (u && u.scheme === 'file' ? doc
      : { uri: u, getText: () => (providers[u.scheme] ? providers[u.scheme].provideTextDocumentContent(u) : '') }),
    registerTextDocumentContentProvider: (scheme, provider) => { providers[scheme] = provider; return { dispose() {} }; },
    onDidChangeConfiguration: (f) => {
      configurationListeners.add(f);
      return { dispose() { configurationListeners.delete(f); } };
    },
    onDidOpenTextDocument: () => ({ dispose() {} }), onDidCloseTextDocument: () => ({ dispose() {} }),
    onDidChangeTextDocument: () => ({ dispose() {} }), onDidSaveTextDocument: () => ({ dispose() {} }),
    onWillSaveTextDocument: () => ({ dispose() {} }),
    onDidChangeWorkspaceFolders: () => ({ dispose() {} }),
    getWorkspaceFolder: () => undefined,
  }, 'workspace'),
  commands: stubbed({
    registerCommand: (id, f) => { if (commands.has(id)) throw new Error(`command '${id}' already exists`); commands.set(id, f); return { dispose() { commands.delete(id); } }; },
    executeCommand: async (id, ...a) => { log('executeCommand', id, String(a[0])); if (commands.has(id)) return commands.get(id)(...a); throw new Error('no command ' + id); },
  }, 'commands'),
  languages: stubbed({ match: (sel, d) => (d.languageId === 'fuse' ? 10 : 0), createDiagnosticCollection: () => ({ set() {}, delete() {}, clear() {}, dispose() {}, forEach() {} }) }, 'languages'),
  env: stubbed({ appName: 'stub', language: 'en', machineId: 'x', sessionId: 'y', uiKind: 1 }, 'env'),
  version: '1.90.0',
};
const origLoad = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === 'vscode') return stubbed(vscode, 'vscode');
  return origLoad.apply(this, arguments);
};

const ROOT = path.join(__dirname, '..');
const ext = () => require(path.join(ROOT, 'out', 'extension.js'));
const context = { subscriptions: [], extensionPath: ROOT, extensionUri: Uri.file(ROOT), asAbsolutePath: (p) => path.join(ROOT, p) };
// Bounds for a hung server, not speed targets: fuse-lsp is a Python subprocess, and on
// a loaded CI machine its start (or a first server's exit) can take tens of seconds.
const WAIT_MS = 60000;
const TEST_MS = 180000;
const until = async (what, probe, ms = WAIT_MS) => {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    const got = probe();
    if (got) return got;
  }
  throw new Error(`timed out waiting for ${what}`);
};

test('activation starts fuse-lsp over stdio; the commands are the extension\'s own', { timeout: TEST_MS }, async () => {
  await ext().activate(context);
  assert.equal(global.statusItem.text, '$(check) Fuse');
  assert.match(global.statusItem.tooltip.value, /running/);
  assert.match(global.statusItem.tooltip.value, /--stdio/);
  // registered once: the client did not register the server's fuse.run/fuse.explain again
  for (const id of ['fuse.run', 'fuse.train', 'fuse.explain', 'fuse.restartServer', 'fuse.showOutput']) {
    assert.ok(commands.has(id), id);
  }
});

test('Fuse: Run from the palette runs the active file and shows the summary', { timeout: TEST_MS }, async () => {
  const result = await commands.get('fuse.run')();
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.match(result.message, /^Ran datalog\.fuse on cpu \(numpy\): Ancestor 8 tuples, Ancestor\(Alice, x\)\? 4 answers/);
  const out = channels['Fuse Run'].lines.join('\n');
  // a relation as its count and tuples, as a program writes them (not a 0/1 preview)
  assert.match(out, /\nAncestor {2}8 tuples\n {2}\(Alice, Bob\)\n {2}\(Alice, Carol\)\n/);
  assert.doesNotMatch(out, /preview \[0, 1/);
  assert.match(out, /Ancestor\(Alice, x\)\? {2}4 answers\n {2}\(Bob\)/);
});

test('Fuse: Run opens the Fuse Results panel: numbers at once, then the pictures', { timeout: TEST_MS }, async () => {
  const panel = webviews.find((w) => w.viewType === 'fuse.results');
  assert.ok(panel, 'no results panel');
  assert.equal(panel.title, 'Fuse Results');
  assert.equal(panel.options.enableScripts, true);  // media/panel.js only (the CSP's nonce)
  assert.deepEqual(panel.options.localResourceRoots.map((u) => u.path), [path.join(ROOT, 'media')]);
  // opened as the run started, then redrawn with its answer
  assert.match(panel.pages[0], /data-running="yes"/);
  assert.match(panel.pages[0], /Running datalog\.fuse on cpu \(numpy\)…/);
  const first = panel.pages.find((p) => /data-run-count="1"/.test(p));
  assert.match(first, /data-running="no"/);
  assert.match(first, /<h3>Ancestor<\/h3>/);
  assert.match(first, /<span class="count">8 tuples<\/span><\/p><ul class="tuples"><li><code>\(Alice, Bob\)<\/code><\/li>/);
  assert.match(first, /data-pictures="pending"/);
  assert.match(panel.pages[0], /<link rel="stylesheet" href="vscode-webview-resource:[^"]*media\/panel\.css">/);
  assert.match(panel.pages[0], /<script nonce="\w+" src="vscode-webview-resource:[^"]*media\/panel\.js">/);
  const drawn = await until('the pictures', () => panel.pages.find((p) => /data-pictures="ready"/.test(p)));
  assert.match(drawn, /<img class="picture" src="data:image\/svg\+xml;base64,[A-Za-z0-9+/=]{100,}" alt="picture of Ancestor"/);
  assert.match(drawn, /<td><code>Ancestor\(Alice, x\)\?<\/code><\/td><td class="answer">4 answers<\/td>/);
});

test('a code lens\'s fuse.run [uri, {target}] goes through the same command', { timeout: TEST_MS }, async () => {
  const result = await commands.get('fuse.run')(pathToFileURL(file).href, { target: 'Ancestor' });
  assert.equal(result.ok, true);
  assert.equal(result.target, 'Ancestor');
});

test('Fuse: Explain opens the plan as markdown', { timeout: TEST_MS }, async () => {
  const markdown = await commands.get('fuse.explain')();
  assert.match(markdown, /^## Plan of `datalog\.fuse`/);
  // and the panel shows the program's graph, below the last run
  const page = webviews.find((w) => w.viewType === 'fuse.results').webview.html;
  assert.match(page, /data-graph="ready"/);
  assert.match(page, /<img class="graph" src="data:image\/svg\+xml;base64,[A-Za-z0-9+/=]{100,}" alt="dataflow graph of datalog.fuse">/);
  assert.match(page, /<h3>Ancestor<\/h3>/);
});

test('Fuse: Why opens a derivation beside the program; a tuple clicked in the panel opens its own', { timeout: TEST_MS }, async () => {
  assert.ok(commands.has('fuse.why'));
  const answer = await commands.get('fuse.why')(pathToFileURL(file).href, 'Ancestor(Alice, Dave)');
  assert.equal(answer.ok, true, JSON.stringify(answer));
  assert.equal(answer.why.type, 'Derivation');
  assert.equal(answer.why.height, 3);
  const shown = shownDocuments[shownDocuments.length - 1];
  assert.equal(shown.uri.scheme, 'fuse-why');
  assert.match(shown.getText(), /^# why Ancestor\(Alice, Dave\)\nAncestor\(Alice, Dave\) {3}by line 11: Ancestor\(x,z\) = Ancestor\(x,y\) Parent\(y,z\)/);
  assert.match(shown.getText(), /Parent\(Carol, Dave\) {3}fact, line 6/);
  // the panel's page script posts {type: 'why', target} for a clicked tuple (media/panel.js)
  const panel = webviews.find((w) => w.viewType === 'fuse.results');
  const before = shownDocuments.length;
  panel.listeners.forEach((listener) => listener({ type: 'why', target: 'Ancestor(Alice, Eve)' }));
  const clicked = await until('the clicked tuple\'s why', () => shownDocuments.slice(before).find(
    (d) => /^# why Ancestor\(Alice, Eve\)\n/.test(d.getText())));
  assert.match(clicked.getText(), /Parent\(Bob, Eve\) {3}fact, line 7/);
  const refused = await commands.get('fuse.why')(pathToFileURL(file).href, 'Ancestor(Alice');
  assert.equal(refused.ok, false);
  assert.match(refused.error, /expected `,` or `\)` at column 15/);
});

test('Fuse: Train asks the server and shows its answer in the panel (here: no loss to train)', { timeout: TEST_MS }, async () => {
  const result = await commands.get('fuse.train')(pathToFileURL(file).href, { backend: 'torch', steps: 5 });
  assert.equal(result.ok, false);
  assert.match(result.error, /datalog\.fuse: the program names no loss/);
  const panel = webviews.find((w) => w.viewType === 'fuse.results');
  const page = await until('the training answer', () => panel.pages.slice().reverse().find((p) => /<h2>Training<\/h2>/.test(p)));
  assert.match(page, /<p class="error">Fuse: datalog\.fuse: the program names no loss/);
  assert.match(channels['Fuse Run'].lines.join('\n'), /train file:.*datalog\.fuse\nFuse: datalog\.fuse: the program names no loss/);
});

test('fuse.server.python starts `python -m fuse_lsp --stdio`', { timeout: TEST_MS }, async () => {
  settings['server.python'] = process.env.FUSE_PYTHON || 'python3';
  await commands.get('fuse.restartServer')();
  assert.equal(global.statusItem.text, '$(check) Fuse');
  assert.match(global.statusItem.tooltip.value, /-m fuse_lsp --stdio/);
  const result = await commands.get('fuse.run')();
  assert.equal(result.ok, true);
});

/** The command lines of the language servers this process started (Linux: /proc). */
function ourServers() {
  const parents = new Map();
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      parents.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch { /* a process that ended while we looked */ }
  }
  const ours = (pid) => { for (let p = pid; p > 1; p = parents.get(p)) { if (p === process.pid) return true; } return false; };
  const lines = [];
  for (const pid of parents.keys()) {
    if (pid === process.pid || !ours(pid)) continue;
    try {
      const line = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      if (/fuse[-_]lsp/.test(line)) lines.push(line.trim());
    } catch { /* ended */ }
  }
  return lines;
}

test('settings that arrive while the server starts: it restarts once, one server runs', { timeout: TEST_MS }, async (t) => {
  if (!fs.existsSync('/proc/self/stat')) {
    t.skip('no /proc to list the servers');
    return;
  }
  // As code-server may do on a first launch: the extension starts the server of
  // the defaults, and the user settings (fuse.server.python) arrive while it starts.
  settings['server.python'] = '';
  const channel = channels['Fuse Language Server'];
  const logged = channel.lines.length;
  const appendLine = channel.appendLine;
  channel.appendLine = function (line) {
    appendLine.call(this, line);
    if (line === `Starting the Fuse language server: ${settings['server.path']} --stdio`) {
      channel.appendLine = appendLine;
      setImmediate(() => {  // the client is starting: its server answers later
        settings['server.python'] = process.env.FUSE_PYTHON || 'python3';
        const event = { affectsConfiguration: (section) => 'fuse.server.python'.startsWith(section) };
        for (const listener of [...configurationListeners]) listener(event);
      });
    }
  };
  await commands.get('fuse.restartServer')();
  const shown = () => global.statusItem.text === '$(check) Fuse' &&
    /-m fuse_lsp --stdio/.test(global.statusItem.tooltip.value);
  await until('the server of fuse.server.python running', shown);
  // the first server stops (shutdown, exit); the one of the settings stays alone
  const one = () => { const s = ourServers(); return s.length === 1 && /-m fuse_lsp --stdio/.test(s[0]); };
  await until('one server: python -m fuse_lsp', one, WAIT_MS).catch(() => undefined);
  const log = () => JSON.stringify(channel.lines.slice(logged).map((l) => l.slice(0, 200)), null, 1);
  assert.deepEqual(ourServers().map((line) => /-m fuse_lsp --stdio/.test(line)), [true],
    JSON.stringify(ourServers()) + log());
  messages.length = 0;
  const result = await commands.get('fuse.run')();
  assert.equal(result?.ok, true, JSON.stringify([result, messages]) + log());
});

test('a setting of the wrong type is ignored, in words: the server of the others starts', { timeout: TEST_MS }, async () => {
  settings['server.python'] = 3;  // settings.json: "fuse.server.python": 3
  settings['server.path'] = process.env.FUSE_LSP || 'fuse-lsp';
  messages.length = 0;
  await commands.get('fuse.restartServer')();
  assert.equal(global.statusItem.text, '$(check) Fuse', log());
  assert.ok(messages.some(([kind, text]) => kind === 'warning' && /fuse\.server\.python = 3/.test(text)),
    JSON.stringify(messages));
  const result = await commands.get('fuse.run')();
  assert.equal(result?.ok, true, JSON.stringify([result, messages]) + log());
});

test('a server that cannot start: stopped in the status bar, and an error message', { timeout: TEST_MS }, async () => {
  settings['server.python'] = '';
  settings['server.path'] = path.join(workspace, 'no-such-fuse-lsp');
  messages.length = 0;
  await commands.get('fuse.restartServer')();
  assert.equal(global.statusItem.text, '$(error) Fuse');
  assert.match(global.statusItem.tooltip.value, /stopped/);
  assert.ok(messages.some(([kind, text]) => kind === 'error' && /could not start the language server/.test(text)),
    JSON.stringify(messages));
  await ext().deactivate();
  fs.rmSync(workspace, { recursive: true, force: true });
});
