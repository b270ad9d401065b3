/**
 * The Fuse extension: starts `fuse-lsp` over stdio with vscode-languageclient,
 * shows the server's state in the status bar, and binds the server's
 * `fuse.run`, `fuse.train`, `fuse.explain` and `fuse.why` commands to VS Code
 * commands with a UI (a backend/device quick pick, a run output channel, a
 * markdown preview, a why's tree beside the program, and the Fuse Results panel:
 * src/panel.ts, whose tuples open their why).
 */
import * as os from 'os';
import * as vscode from 'vscode';
import {
  CodeActionRequest,
  DynamicFeature,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  StaticFeature,
  TransportKind,
} from 'vscode-languageclient/node';
import { baseName } from './html';
import { ResultsPanel } from './panel';
import {
  formatRunResult, formatTrainResult, RunResult, RunTarget, runMessage, runTargets, serverCommand, TrainResult,
  trainMessage, trainTargets,
} from './summary';

const RUN = 'fuse.run';
const TRAIN = 'fuse.train';
const TRAIN_KIND = 'source.fuse.train';
const EXPLAIN = 'fuse.explain';
const RUN_KIND = 'source.fuse.run';
const EXPLAIN_SCHEME = 'fuse-explain';
const WHY = 'fuse.why';
const WHY_SCHEME = 'fuse-why';

/**
 * A LanguageClient that leaves `workspace/executeCommand` to this extension.
 *
 * By default the client registers a VS Code command for every command the
 * server announces (`fuse.run`, `fuse.explain`); this extension registers
 * those ids itself (with a quick pick and result views), so that the palette,
 * the editor's Run button, and the server's code lenses and "Run on ..."
 * code actions all go through the same handlers, and the commands exist even
 * while the server is down.
 */
class FuseLanguageClient extends LanguageClient {
  public override registerFeature(feature: StaticFeature | DynamicFeature<any>): void {
    const method = (feature as Partial<DynamicFeature<any>>).registrationType?.method;
    if (method === ExecuteCommandRequest.method) {
      return;
    }
    super.registerFeature(feature);
  }
}

let client: FuseLanguageClient | undefined;
let serverLine = '';
let lastError: string | undefined;
let output: vscode.OutputChannel;
let runOutput: vscode.OutputChannel;
let status: vscode.StatusBarItem;
let results: ResultsPanel;
const plans = new Map<string, string>();
const plansChanged = new vscode.EventEmitter<vscode.Uri>();
const whys = new Map<string, string>();
const whysChanged = new vscode.EventEmitter<vscode.Uri>();
// Starts, restarts and stops of the server, one after another (see `queued`).
let lifecycle: Promise<void> = Promise.resolve();

/**
 * Runs `step` after every start, restart and stop asked before it has ended.
 * A configuration change can arrive while the first server is still starting
 * (code-server may hand the extension host its user settings only after the
 * activation): its restart then waits for that start and stops that server,
 * rather than failing to stop a client that is starting (vscode-languageclient
 * refuses) and leaving the server of the old configuration running beside the
 * new one.
 */
function queued(step: () => Promise<void>): Promise<void> {
  const next = lifecycle.then(step, step);
  lifecycle = next.catch(() => undefined);
  return next;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('Fuse Language Server');
  runOutput = vscode.window.createOutputChannel('Fuse Run');
  status = vscode.window.createStatusBarItem('fuse.status', vscode.StatusBarAlignment.Right, 100);
  status.name = 'Fuse Language Server';
  status.command = 'fuse.showOutput';
  results = new ResultsPanel(context.extensionUri, (line) => output.appendLine(line));
  context.subscriptions.push(output, runOutput, status, plansChanged, whysChanged, results);

  context.subscriptions.push(
    vscode.commands.registerCommand(RUN, runCommand),
    vscode.commands.registerCommand(TRAIN, trainCommand),
    vscode.commands.registerCommand(EXPLAIN, explainCommand),
    vscode.commands.registerCommand(WHY, whyCommand),
    vscode.commands.registerCommand('fuse.restartServer', () => queued(restartClient)),
    vscode.commands.registerCommand('fuse.showOutput', () => output.show(true)),
    vscode.workspace.registerTextDocumentContentProvider(EXPLAIN_SCHEME, {
      onDidChange: plansChanged.event,
      provideTextDocumentContent: (uri) => plans.get(uri.toString()) ?? '',
    }),
    vscode.workspace.registerTextDocumentContentProvider(WHY_SCHEME, {
      onDidChange: whysChanged.event,
      provideTextDocumentContent: (uri) => whys.get(uri.toString()) ?? '',
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('fuse.server')) {
        void queued(restartClient);
      }
    }),
  );
  await queued(startClient);
}

export async function deactivate(): Promise<void> {
  await queued(async () => {
    const stopping = client;
    client = undefined;
    if (stopping) {
      await stopClient(stopping);
    }
  });
}

function createClient(): FuseLanguageClient {
  const config = vscode.workspace.getConfiguration('fuse');
  const { command, args, ignored } = serverCommand(
    config.get<unknown>('server.path'), config.get<unknown>('server.python'), os.homedir());
  for (const setting of ignored ?? []) {
    output.appendLine(`Ignored the setting ${setting}; using the default.`);
    void vscode.window.showWarningMessage(`Fuse: the setting ${setting} is ignored.`);
  }
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  // TransportKind.stdio: vscode-languageclient appends `--stdio` to the command line.
  const executable = { command, args, transport: TransportKind.stdio, options: cwd ? { cwd } : {} };
  serverLine = [command, ...args, '--stdio'].join(' ');
  const serverOptions: ServerOptions = { run: executable, debug: executable };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'fuse' },
      { scheme: 'untitled', language: 'fuse' },
    ],
    outputChannel: output,
    traceOutputChannel: output,
    initializationOptions: {
      backend: config.get<string>('backend'),
      device: config.get<string>('device'),
      allowSinkWrites: config.get<boolean>('allowSinkWrites'),
      runTrace: config.get<boolean>('runTrace'),
      trainOptimizer: config.get<string>('trainOptimizer'),
      trainLearningRate: config.get<number>('trainLearningRate'),
      trainSteps: config.get<number>('trainSteps'),
      trainBatch: config.get<string>('trainBatch'),
      trainSeed: config.get<number>('trainSeed'),
    },
    // Sends the `fuse` section with workspace/didChangeConfiguration when it changes,
    // and workspace/didChangeWatchedFiles when a .fuse file changes on disk (the files
    // importing it get their diagnostics again).
    synchronize: {
      configurationSection: 'fuse',
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.fuse'),
    },
  };
  // The id `fuse` makes the client read its trace level from `fuse.trace.server`.
  const created = new FuseLanguageClient('fuse', 'Fuse Language Server', serverOptions, clientOptions);
  created.onDidChangeState((event) => {
    if (created === client) {
      showState(event.newState);
    }
  });
  return created;
}

async function startClient(): Promise<void> {
  lastError = undefined;
  client = createClient();
  showState(State.Starting);
  output.appendLine(`Starting the Fuse language server: ${serverLine}`);
  const starting = client;
  try {
    await starting.start();
  } catch (error) {
    if (starting !== client) {
      return;
    }
    lastError = error instanceof Error ? error.message : String(error);
    output.appendLine(`The Fuse language server did not start: ${lastError}`);
    showState(State.Stopped);
    // not awaited: the next restart (`queued`) must not wait for the user's answer
    void vscode.window.showErrorMessage(
      `Fuse: could not start the language server (${serverLine}). Install fuse-lang ` +
        '(`pip install fuse-lang`) or set "fuse.server.path" or "fuse.server.python".',
      'Open Settings', 'Show Output').then((choice) => {
      if (choice === 'Open Settings') {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'fuse.server');
      } else if (choice === 'Show Output') {
        output.show(true);
      }
    });
  }
}

async function restartClient(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    await stopClient(old);
  }
  await startClient();
}

/** Stops a client's server: one still starting once its start has settled. */
async function stopClient(old: FuseLanguageClient): Promise<void> {
  try {
    if (old.state === State.Starting) {
      await old.start().catch(() => undefined);  // the start in progress, not a new one
    }
    // dispose() stops a running client; one that failed to start has nothing to stop
    if (old.needsStop()) {
      await old.dispose();
    }
  } catch (error) {
    output.appendLine(`Stopping the server: ${String(error)}`);
  }
}

function showState(state: State): void {
  const [icon, word] = state === State.Running ? ['$(check)', 'running']
    : state === State.Starting ? ['$(sync~spin)', 'starting']
      : ['$(error)', 'stopped'];
  status.text = `${icon} Fuse`;
  const tooltip = new vscode.MarkdownString(`**Fuse language server: ${word}**\n\n`);
  tooltip.appendCodeblock(serverLine, 'shell');
  if (state === State.Stopped && lastError) {
    tooltip.appendMarkdown('\n\n');
    tooltip.appendText(lastError);
  }
  tooltip.appendMarkdown('\n\nClick to show the server output.');
  status.tooltip = tooltip;
  status.backgroundColor = state === State.Stopped
    ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  status.show();
}

/** The client, once the server runs (waiting while it starts); else a message and undefined. */
async function runningClient(): Promise<FuseLanguageClient | undefined> {
  const current = client;
  if (current && current.state === State.Starting) {
    await current.start().catch(() => undefined);  // the start in progress
  }
  if (current && current === client && current.state === State.Running) {
    return current;
  }
  void vscode.window.showErrorMessage('Fuse: the language server is not running.', 'Restart', 'Show Output')
    .then((choice) => {
      if (choice === 'Restart') {
        void restartClient();
      } else if (choice === 'Show Output') {
        output.show(true);
      }
    });
  return undefined;
}

/**
 * The URI (as the server knows it) of the document a command is about: the
 * first argument (a URI string from a code lens or code action, or a Uri from
 * a menu), else the active Fuse editor. The document is opened first, so that
 * the server has its text.
 */
/** What a command acts on: the running client and the program's URI (given, or the active editor's). */
async function commandTarget(uriArg: unknown): Promise<{ lsp: FuseLanguageClient; uri: string } | undefined> {
  const lsp = await runningClient();
  if (!lsp) {
    return undefined;
  }
  const uri = await targetUri(lsp, uriArg);
  return uri ? { lsp, uri } : undefined;
}

async function targetUri(lsp: LanguageClient, arg: unknown): Promise<string | undefined> {
  let uri: vscode.Uri | undefined;
  if (typeof arg === 'string') {
    return arg;
  } else if (arg instanceof vscode.Uri) {
    uri = arg;
  } else {
    const editor = vscode.window.activeTextEditor;
    if (editor && editor.document.languageId === 'fuse') {
      uri = editor.document.uri;
    }
  }
  if (!uri) {
    void vscode.window.showErrorMessage('Fuse: open a .fuse file first.');
    return undefined;
  }
  const document = await vscode.workspace.openTextDocument(uri);
  return lsp.code2ProtocolConverter.asUri(document.uri);
}

/** The server's source actions of one kind for a document (null when it cannot say). */
async function sourceActions(lsp: LanguageClient, uri: string, kind: string, what: string
): Promise<unknown[] | null> {
  try {
    return await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'Fuse: finding backends' },
      () => lsp.sendRequest(CodeActionRequest.type, {
        textDocument: { uri },
        range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
        context: { diagnostics: [], only: [kind] },
      }));
  } catch (error) {
    output.appendLine(`Asking for ${what}: ${String(error)}`);
    return null;
  }
}

async function pickTarget(lsp: LanguageClient, uri: string): Promise<RunTarget | undefined> {
  const config = vscode.workspace.getConfiguration('fuse');
  const preferred = { backend: config.get<string>('backend') ?? 'numpy', device: config.get<string>('device') ?? 'cpu' };
  // The server's "Run on <device> (<backend>)" actions (it probes the frameworks once).
  const actions = await sourceActions(lsp, uri, RUN_KIND, 'run targets');
  const targets = runTargets(actions, preferred);
  if (targets.length === 1) {
    return targets[0];
  }
  const items = targets.map((t) => ({
    label: `$(play) ${t.device} (${t.backend})`,
    description: t.backend === preferred.backend && t.device === preferred.device ? 'default' : undefined,
    target: t,
  }));
  const picked = await vscode.window.showQuickPick(items, {
    title: 'Fuse: Run',
    placeHolder: 'Run on which device (backend)?',
  });
  return picked?.target;
}

/** Where to train: the server's "Train on ..." actions (torch and jax only); a quick
 * pick when there are several; a message when there are none. */
async function pickTrainTarget(lsp: LanguageClient, uri: string): Promise<RunTarget | undefined> {
  const config = vscode.workspace.getConfiguration('fuse');
  const preferred = { backend: config.get<string>('backend') ?? 'torch', device: config.get<string>('device') ?? 'cpu' };
  const actions = await sourceActions(lsp, uri, TRAIN_KIND, 'training targets');
  const targets = trainTargets(actions, preferred);
  if (targets.length <= 1) {
    if (!targets.length) {
      void vscode.window.showErrorMessage('Fuse: nothing to train on: the program needs a loss (`train L`), ' +
        'and training needs torch or jax installed where the server runs (numpy computes no gradients).');
    }
    return targets[0];
  }
  const picked = await vscode.window.showQuickPick(targets.map((t) => ({
    label: `$(pulse) ${t.device} (${t.backend})`,
    description: t.backend === preferred.backend && t.device === preferred.device ? 'default' : undefined,
    target: t,
  })), { title: 'Fuse: Train', placeHolder: 'Train on which device (backend)?' });
  return picked?.target;
}

async function trainCommand(uriArg?: unknown, options?: unknown): Promise<TrainResult | undefined> {
  const found = await commandTarget(uriArg);
  if (!found) {
    return undefined;
  }
  const { lsp, uri } = found;
  const given = options && typeof options === 'object' ? { ...options as Record<string, unknown> } : {};
  if (!('backend' in given)) {  // the lens and the palette: pick among the frameworks that train
    const target = await pickTrainTarget(lsp, uri);
    if (!target) {
      return undefined;
    }
    Object.assign(given, target);
  }
  const program = documentName(uri);
  results.showRunning(program, `${String(given.device ?? 'cpu')} (${String(given.backend)})`, 'Training');
  let result: TrainResult | undefined;
  try {
    // The server reports the step and loss as progress (cancellable) and shows the message itself.
    result = await lsp.sendRequest(ExecuteCommandRequest.type, { command: TRAIN, arguments: [uri, given] });
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    runOutput.appendLine(`Fuse: the training of ${uri} failed: ${text}`);
    result = { ok: false, error: `the training failed: ${text}` };
  }
  results.showTraining(program, result ?? undefined);
  runOutput.appendLine(`--- ${new Date().toLocaleTimeString()} train ${uri}`);
  for (const line of formatTrainResult(result)) {
    runOutput.appendLine(line);
  }
  runOutput.appendLine('');
  vscode.window.setStatusBarMessage(`${result && result.ok ? '$(check)' : '$(error)'} ${trainMessage(result)}`, 8000);
  return result ?? undefined;
}

async function runCommand(uriArg?: unknown, options?: unknown): Promise<RunResult | undefined> {
  const found = await commandTarget(uriArg);
  if (!found) {
    return undefined;
  }
  const { lsp, uri } = found;
  let request: Record<string, unknown>;
  const given = options && typeof options === 'object' ? options as Record<string, unknown> : {};
  if (['backend', 'device', 'target'].some((key) => key in given)) {
    request = given;  // from a code lens (target) or a "Run on ..." code action (backend, device)
  } else {
    const target = await pickTarget(lsp, uri);
    if (!target) {
      return undefined;
    }
    request = { ...target };
  }
  let result: RunResult | undefined;
  const config = vscode.workspace.getConfiguration('fuse');
  const where = `${String(request.device ?? config.get<string>('device') ?? 'cpu')} ` +
    `(${String(request.backend ?? config.get<string>('backend') ?? 'numpy')})`;
  results.showRunning(documentName(uri), where);
  try {
    // The server reports progress (cancellable) and shows the run's message itself.
    result = await lsp.sendRequest(ExecuteCommandRequest.type, { command: RUN, arguments: [uri, request] });
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    runOutput.appendLine(`Fuse: the run of ${uri} failed: ${text}`);
    void vscode.window.showErrorMessage(`Fuse: the run failed: ${text}`);
    void results.showRun(lsp, uri, documentName(uri), { ok: false, error: `the run failed: ${text}` });
    return undefined;
  }
  // the panel first: its numbers are in the answer; its pictures follow
  void results.showRun(lsp, uri, documentName(uri), result ?? undefined);
  runOutput.appendLine(`--- ${new Date().toLocaleTimeString()} ${uri}`);
  for (const line of formatRunResult(result)) {
    runOutput.appendLine(line);
  }
  runOutput.appendLine('');  // shown in the Fuse Results panel; the text stays in Output > Fuse Run
  const ok = Boolean(result && result.ok);
  vscode.window.setStatusBarMessage(`${ok ? '$(check)' : '$(error)'} ${runMessage(result)}`, 8000);
  return result ?? undefined;
}

async function explainCommand(uriArg?: unknown): Promise<string | undefined> {
  const found = await commandTarget(uriArg);
  if (!found) {
    return undefined;
  }
  const { lsp, uri } = found;
  let answer: { kind?: string; value?: string } | undefined;
  try {
    answer = await lsp.sendRequest(ExecuteCommandRequest.type, { command: EXPLAIN, arguments: [uri] });
  } catch (error) {
    void vscode.window.showErrorMessage(`Fuse: explain failed: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  const markdown = answer?.value ?? '';
  const source = vscode.Uri.parse(uri);
  const name = source.path.split('/').pop() || 'program.fuse';
  // A read-only virtual document (no "save?" prompt), refreshed on each explain.
  const planUri = vscode.Uri.from({ scheme: EXPLAIN_SCHEME, path: `/${name}.plan.md`, query: uri });
  plans.set(planUri.toString(), markdown);
  plansChanged.fire(planUri);
  try {
    await vscode.commands.executeCommand('markdown.showPreviewToSide', planUri);
  } catch {
    const document = await vscode.workspace.openTextDocument(planUri);
    await vscode.languages.setTextDocumentLanguage(document, 'markdown');
    await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true });
  }
  await results.showGraph(lsp, uri, documentName(uri));
  return markdown;
}

/** The server's answer to `fuse.why` (docs/why.md). */
interface WhyAnswer { ok: boolean; target?: string; text?: string; why?: unknown; error?: string }

/**
 * Fuse: Why: why an answer of the program's last run holds, does not, or has its
 * value (the server's `fuse.why`), as a read-only text beside the program.  The
 * target comes from the Fuse Results panel (a tuple clicked) or an input box.
 */
async function whyCommand(uriArg?: unknown, targetArg?: unknown): Promise<WhyAnswer | undefined> {
  const found = await commandTarget(uriArg);
  if (!found) {
    return undefined;
  }
  const { lsp, uri } = found;
  const target = typeof targetArg === 'string' && targetArg.trim() ? targetArg : await vscode.window.showInputBox({
    title: 'Fuse: Why', prompt: 'A tuple or an element of the last run', placeHolder: 'Ancestor(Alice, Eve) or Y[3]',
  });
  if (!target) {
    return undefined;
  }
  let answer: WhyAnswer | undefined;
  try {
    answer = await lsp.sendRequest(ExecuteCommandRequest.type, { command: WHY, arguments: [uri, target] });
  } catch (error) {
    answer = { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  if (!answer || !answer.ok) {  // (the server showed its message; a refused request did not)
    if (!answer || !('error' in answer)) {
      void vscode.window.showErrorMessage('Fuse: why failed: the server gave no answer');
    }
    return answer ?? undefined;
  }
  const name = documentName(uri);
  const whyUri = vscode.Uri.from({ scheme: WHY_SCHEME, path: `/${name}.why.txt`, query: uri });
  whys.set(whyUri.toString(), `# why ${target}\n${answer.text ?? ''}\n`);
  whysChanged.fire(whyUri);
  const document = await vscode.workspace.openTextDocument(whyUri);
  await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true });
  return answer;
}

/** A document's file name, for titles. */
function documentName(uri: string): string {
  return baseName(vscode.Uri.parse(uri).path) || uri;
}
