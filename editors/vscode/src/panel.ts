/**
 * The Fuse Results panel: one webview beside the editor, opened by Fuse: Run
 * and Fuse: Explain and redrawn on each. A run's numbers show at once (they
 * are in the run's answer); its pictures follow when the server has drawn
 * them (`fuse.plot`), and Explain's graph when the server has drawn it
 * (`fuse.graph`). Pictures come back as files and are shown as `data:` URIs,
 * so the page needs no access to the server's folders. The page itself is
 * src/panelHtml.ts; it is made once, and each update is a message with its new
 * `<main>` (media/panel.js swaps it in): faster than a new page, and the
 * scroll position stays.
 */
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import * as vscode from 'vscode';
import { ExecuteCommandRequest, LanguageClient } from 'vscode-languageclient/node';
import { baseName, pictureDataUri } from './html';
import { emptyState, mainHtml, makeNonce, PanelState, panelHtml } from './panelHtml';
import { RunResult, TrainResult } from './summary';

const VIEW_TYPE = 'fuse.results';

interface PlotAnswer { ok?: boolean; pictures?: string[]; error?: string }
interface GraphAnswer { ok?: boolean; path?: string; error?: string }

async function readPicture(path: string): Promise<[string, string]> {
  const name = baseName(path);
  return [name, pictureDataUri(name, await fs.readFile(path))];
}

export class ResultsPanel {
  private panel: vscode.WebviewPanel | undefined;
  private state: PanelState = emptyState();
  private generation = 0;  // a run's pictures that arrive after a newer run are dropped
  private uri: string | undefined;  // the document of the last run shown

  constructor(private readonly extensionUri: vscode.Uri, private readonly log: (line: string) => void) {}

  /** Open the panel as a run starts (so that its answer only redraws the page). */
  showRunning(program: string, where: string, doing = 'Running'): void {
    const sameProgram = this.state.program === program;
    const running = `${doing} ${program} on ${where}…`;
    this.state = sameProgram ? { ...this.state, running }
      : { ...emptyState(), runCount: this.state.runCount, program, running };
    this.draw(true);
  }

  /** Show a training's answer: its loss curve and final loss, above the last run. */
  showTraining(program: string, result: TrainResult | undefined): void {
    const sameProgram = this.state.program === program;
    const base = sameProgram ? this.state : { ...emptyState(), runCount: this.state.runCount, program };
    this.state = {
      ...base,
      training: result ?? { ok: false, error: 'the server gave no answer' },
      answeredAt: Date.now(),
      running: undefined,
    };
    this.draw(true);
  }

  /** Show a run's answer now, then ask the server for its pictures. */
  async showRun(lsp: LanguageClient, uri: string, program: string, result: RunResult | undefined): Promise<void> {
    const generation = ++this.generation;
    this.uri = uri;  // whose tuples a click explains (fuse.why)
    const sameProgram = this.state.program === program;
    this.state = {
      ...this.state,
      program,
      run: result ?? { ok: false, error: 'the server gave no answer' },
      runCount: this.state.runCount + 1,
      answeredAt: Date.now(),
      pictures: {},
      picturesState: result && result.ok ? 'pending' : 'none',
      picturesNote: undefined,
      graph: sameProgram ? this.state.graph : undefined,
      running: undefined,
    };
    this.draw(true);
    if (!result || !result.ok) {
      return;
    }
    let pictures: Record<string, string> = {};
    let note: string | undefined;
    try {
      const answer: PlotAnswer = await lsp.sendRequest(ExecuteCommandRequest.type,
        { command: 'fuse.plot', arguments: [uri, { format: 'svg' }] });
      if (answer && answer.ok) {
        pictures = Object.fromEntries(await Promise.all((answer.pictures ?? []).map(readPicture)));
      } else {
        note = answer?.error ?? 'the server drew no pictures';
      }
    } catch (error) {
      note = error instanceof Error ? error.message : String(error);
    }
    if (generation !== this.generation) {
      return;
    }
    if (note) {
      this.log(`Fuse Results: no pictures: ${note}`);
    }
    this.state = { ...this.state, pictures, picturesState: note ? 'failed' : 'ready', picturesNote: note };
    this.draw();
  }

  /** Show the program's dataflow graph (Fuse: Explain). */
  async showGraph(lsp: LanguageClient, uri: string, program: string): Promise<void> {
    const keep = this.state.program === program;
    this.state = keep ? { ...this.state, graph: { program } }
      : { ...emptyState(), runCount: this.state.runCount, program, graph: { program } };
    this.draw(true);
    let graph: PanelState['graph'];
    try {
      const answer: GraphAnswer = await lsp.sendRequest(ExecuteCommandRequest.type,
        { command: 'fuse.graph', arguments: [uri, { format: 'svg' }] });
      graph = answer && answer.ok && answer.path
        ? { program, uri: (await readPicture(answer.path))[1] }
        : { program, error: answer?.error ?? 'the server drew no graph' };
    } catch (error) {
      graph = { program, error: `the graph could not be drawn: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (this.state.program === program) {
      this.state = { ...this.state, graph };
      this.draw(true, 'program-graph-title');
    }
  }

  dispose(): void {
    this.panel?.dispose();
  }

  /** Redraw the page; `reveal`: also bring the panel to the front of its group (without focus). */
  private draw(reveal = false, focus?: string): void {
    if (!this.panel) {
      this.panel = this.createPanel();
      return;
    } else if (reveal) {
      // always, not only when `visible` is false: that flag lags behind, e.g. just
      // after Explain's markdown preview opened over the panel
      this.panel.reveal(undefined, true);
    }
    this.post(focus);
  }

  /** An update: the new `<main>` for the page's script to swap in (the frame, and its
   * scroll position, stay; `focus`: the id of an element to scroll to); a page that is
   * not live gets it when it loads ("ready"). */
  private post(focus?: string): void {
    const panel = this.panel;
    void panel?.webview.postMessage({ type: 'render', main: mainHtml(this.state), focus })
      .then(undefined, () => undefined);
  }

  private createPanel(): vscode.WebviewPanel {
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const panel = vscode.window.createWebviewPanel(VIEW_TYPE, 'Fuse Results',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, enableFindWidget: true, localResourceRoots: [media] });
    panel.onDidDispose(() => {
      if (this.panel === panel) {
        this.panel = undefined;
      }
    });
    // the page's script asks for the current state whenever it (re)loads
    panel.webview.onDidReceiveMessage((message: { type?: string; target?: unknown }) => {
      if (message && message.type === 'ready' && this.panel === panel) {
        this.post();
      } else if (message && message.type === 'why' && typeof message.target === 'string' && this.uri) {
        // a tuple clicked (media/panel.js): its derivation, by Fuse: Why
        void vscode.commands.executeCommand('fuse.why', this.uri, message.target);
      }
    });
    const webview = panel.webview;
    webview.html = panelHtml(this.state, {
      cspSource: webview.cspSource,
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'panel.css')).toString(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'panel.js')).toString(),
      nonce: makeNonce(randomBytes(16)),
    });
    return panel;
  }
}
