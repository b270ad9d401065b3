/**
 * The Fuse Results panel's page, as a pure function of what it shows (no
 * `vscode` import, so the tests load it in plain Node): the last run's exports
 * (shape, dtype, statistics, picture; a relation's count and tuples), its queries as tables, its trace as
 * small charts, the last training's loss curve (Fuse: Train), and the
 * program's graph after Fuse: Explain.
 *
 * Its content security policy allows the extension's stylesheet (`style-src`
 * the webview's own source), pictures from the webview's source or `data:`
 * URIs, and one script, media/panel.js, by its nonce (it swaps in each update's
 * `<main>`, see `mainHtml`): nothing is fetched from the network, and no inline
 * style or other script runs. Colours are VS Code's theme variables, so the
 * page follows a light or dark theme.
 */
import { baseName, escapeHtml } from './html';
import {
  ArraySummary, isRelation, num, QuerySummary, relationMore, relationTuples, relationWhat, RunResult, runMessage, shapeText,
  TrainResult, trainMessage,
} from './summary';
import { lossChart, traceHtml } from './traceChart';

export const MAX_TUPLES = 100;  // a Boolean query's answers listed in its table

export type PicturesState = 'none' | 'pending' | 'ready' | 'failed';

/** What the panel shows; the extension keeps one and redraws the page from it. */
export interface PanelState {
  program?: string;  // the file name of the document last run or explained
  run?: RunResult;
  training?: TrainResult;  // the last training of the same program (Fuse: Train)
  runCount: number;  // runs shown so far (a data attribute, for tests)
  answeredAt?: number;  // Date.now() when the run's answer arrived
  pictures: Record<string, string>;  // picture file name ("Y.svg") -> data URI
  picturesState: PicturesState;
  picturesNote?: string;  // why there are no pictures
  graph?: { program: string; uri?: string; error?: string };
  running?: string;  // "Running a.fuse on cpu (numpy)…" while a run goes (the last results stay below)
}

/** Where the page's resources come from (`webview.cspSource`, the webview URIs of
 * media/panel.css and media/panel.js) and the script's nonce. */
export interface PageContext {
  cspSource: string;
  styleUri: string;
  scriptUri: string;
  nonce: string;
}

export function emptyState(): PanelState {
  return { runCount: 0, pictures: {}, picturesState: 'none' };
}

/** The page's content security policy: no network, no inline style, one script by its nonce. */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return `default-src 'none'; img-src ${cspSource} data:; style-src ${cspSource}; ` +
    `font-src ${cspSource}; script-src 'nonce-${nonce}'; base-uri 'none'; form-action 'none'`;
}

/** A fresh nonce for the page's script (`random`: bytes, e.g. crypto.randomBytes(16)). */
export function makeNonce(random: Uint8Array): string {
  return Buffer.from(random).toString('hex');
}

/** A tensor's name as the server names its picture file (fuse_lang/ide/picture_files.py `_file_stem`). */
export function pictureStem(name: string): string {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '') || 'value';
}

/** The pictures of `fuse.plot` by file name, for the data URIs the panel keeps. */
export function pictureNames(paths: string[]): string[] {
  return paths.map(baseName);
}

function statsTable(s: ArraySummary): string {
  const heads = ['min', 'max', 'mean', 'std'];
  const cells = [num(s.min), num(s.max), num(s.mean), num(s.std)];
  if (s.nonzeros !== undefined) {
    heads.push('non-zeros');
    cells.push(String(s.nonzeros));
  }
  if (s.nonfinite) {
    heads.push('non-finite');
    cells.push(String(s.nonfinite));
  }
  return `<table class="stats"><thead><tr>${heads.map((h) => `<th>${h}</th>`).join('')}</tr></thead>` +
    `<tbody><tr>${cells.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr></tbody></table>`;
}

function factsLine(s: ArraySummary): string {
  const scalar = !s.shape || s.shape.length === 0;
  const value = scalar && s.preview && s.preview.length
    ? ` · value <span class="value">${escapeHtml(typeof s.preview[0] === 'number' ? num(s.preview[0]) : s.preview[0])}</span>` : '';
  return `<p class="facts"><span class="shape">shape ${escapeHtml(shapeText(s.shape))}</span> · ` +
    `<span class="dtype">${escapeHtml(s.dtype)}</span> · ${s.size} value${s.size === 1 ? '' : 's'}${value}</p>`;
}

/** The pictures for `files` (those that exist), or a note while they are drawn or when they failed. */
function picturesHtml(state: PanelState, files: string[], what: string): string {
  const found = files.filter((f) => state.pictures[f]);
  if (found.length) {
    return `<div class="pictures">${found.map((f) =>
      `<img class="picture" src="${escapeHtml(state.pictures[f])}" alt="${escapeHtml(`picture of ${what}`)}" ` +
      `data-file="${escapeHtml(f)}">`).join('')}</div>`;
  }
  if (state.picturesState === 'pending') {
    return '<p class="note pending">drawing the picture…</p>';
  }
  if (state.picturesState === 'failed') {
    return `<p class="note">no picture: ${escapeHtml(state.picturesNote ?? 'the server could not draw it')}</p>`;
  }
  return '';
}

/** A relation: its tuple count, and its tuples one a line as a program writes them. */
function relationHtml(s: ArraySummary): string {
  const tuples = relationTuples(s);
  const more = relationMore(s);
  const list = tuples.length
    ? `<ul class="tuples">${tuples.map((t) => `<li><code>${escapeHtml(t)}</code></li>`).join('')}</ul>` : '';
  return `<p class="facts"><span class="count">${escapeHtml(relationWhat(s))}</span></p>${list}` +
    (more ? `<p class="note">... and ${more} more</p>` : '');
}

/** The most values a tensor's cells table shows (a larger one shows its statistics only). */
export const MAX_CELLS = 64;

/**
 * A small tensor's values as a table of cells (one or two axes, every value in the
 * preview), each with its index: a click asks for its why (media/panel.js).
 */
function cellsTable(s: ArraySummary): string {
  const shape = s.shape ?? [];
  if (s.truncated || shape.length < 1 || shape.length > 2 || s.size > MAX_CELLS ||
      !s.preview || s.preview.length !== s.size) {
    return '';
  }
  const [rows, cols] = shape.length === 1 ? [1, shape[0]] : [shape[0], shape[1]];
  const cell = (r: number, c: number): string => {
    const index = shape.length === 1 ? `${c}` : `${r}, ${c}`;
    const v = s.preview![r * cols + c];
    return `<td data-index="${index}" title="why ${escapeHtml(index)}">` +
      `${escapeHtml(typeof v === 'number' ? num(v) : String(v))}</td>`;
  };
  const body = Array.from({ length: rows }, (_, r) =>
    `<tr>${Array.from({ length: cols }, (_, c) => cell(r, c)).join('')}</tr>`).join('');
  return `<table class="cells"><tbody>${body}</tbody></table>`;
}

function exportHtml(state: PanelState, name: string, s: ArraySummary): string {
  const stem = pictureStem(name);
  const files = [`${stem}.svg`, `${stem}.graph.svg`, `${stem}.png`, `${stem}.graph.png`];
  const relation = isRelation(s);
  const detail = relation ? relationHtml(s) : `${factsLine(s)}${statsTable(s)}${cellsTable(s)}`;
  return `<section class="export${relation ? ' relation' : ''}" data-name="${escapeHtml(name)}"><h3>${escapeHtml(name)}</h3>` +
    `${detail}${picturesHtml(state, files, name)}</section>`;
}

function tuplesTable(q: QuerySummary): string {
  const tuples = q.tuples ?? [];
  if (!q.free.length) {
    return '';
  }
  const shown = tuples.slice(0, MAX_TUPLES);
  const rows = shown.map((t) => `<tr>${t.map((v) => `<td>${escapeHtml(v)}</td>`).join('')}</tr>`).join('');
  const more = tuples.length > shown.length
    ? `<p class="note">and ${tuples.length - shown.length} more answers</p>` : '';
  return `<table class="answers"><thead><tr>${q.free.map((f) => `<th>${escapeHtml(f)}</th>`).join('')}` +
    `</tr></thead><tbody>${rows}</tbody></table>${more}`;
}

function queryRow(state: PanelState, q: QuerySummary, index: number): string {
  const detail = q.tuples
    ? tuplesTable(q)
    : `${factsLine(q)}${statsTable(q)}${picturesHtml(state, [`query-${index + 1}.svg`, `query-${index + 1}.png`], q.text)}`;
  return `<tr><td><code>${escapeHtml(q.text)}</code></td><td class="answer">${escapeHtml(q.answer)}</td>` +
    `<td>${detail}</td></tr>`;
}

function runHtml(state: PanelState, run: RunResult): string {
  if (!run.ok) {
    return `<p class="error">${escapeHtml(runMessage(run))}</p>`;
  }
  const parts: string[] = [];
  const elapsed = run.elapsed_ms === undefined ? '' : ` in ${num(run.elapsed_ms)} ms`;
  parts.push(`<p class="run-line">on ${escapeHtml(run.device ?? '?')} (${escapeHtml(run.backend ?? '?')})` +
    `${elapsed}${run.target ? ` · target <code>${escapeHtml(run.target)}</code>` : ''}</p>`);
  const outputs = Object.entries(run.outputs ?? {});
  if (outputs.length) {
    parts.push('<h2>Exports</h2>', ...outputs.map(([name, s]) => exportHtml(state, name, s)));
  }
  const queries = run.queries ?? [];
  if (queries.length) {
    parts.push('<h2>Queries</h2><table class="queries"><thead><tr><th>query</th><th>answer</th><th></th></tr>' +
      `</thead><tbody>${queries.map((q, i) => queryRow(state, q, i)).join('')}</tbody></table>`);
  }
  if (!outputs.length && !queries.length) {
    parts.push('<p class="note">The program exports nothing and asks no query.</p>');
  }
  if (run.trace) {
    parts.push('<h2>Trace</h2>', `<section class="trace">${traceHtml(run.trace)}</section>`);
  }
  // what was left out for an error (the engine's other reason: 'not needed by the target')
  const broken = (run.not_run ?? []).filter((n) => !n.reason.startsWith('not needed'));
  if (broken.length) {
    parts.push('<h2>Not run</h2><ul>' + broken.map((n) =>
      `<li><code>${escapeHtml(n.what)}</code> (line ${n.line}): ${escapeHtml(n.reason)}</li>`).join('') + '</ul>');
  }
  if (run.sinks && run.sinks.length) {
    parts.push('<h2>Written</h2><ul>' + run.sinks.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join('') + '</ul>');
  }
  return parts.join('\n');
}

function lossValue(value: number | string | null | undefined): string {
  return typeof value === 'number' ? num(value) : String(value ?? '-');
}

/** A training's answer: the final loss, the loss curve, the validation losses, the params. */
export function trainingHtml(training: TrainResult): string {
  if (!training.ok) {
    return `<h2>Training</h2><section class="training"><p class="error">${escapeHtml(trainMessage(training))}</p></section>`;
  }
  const parts: string[] = [];
  const elapsed = training.elapsed_ms === undefined ? '' : ` in ${num(training.elapsed_ms)} ms`;
  const optimizer = training.options && training.options.optimizer
    ? ` · ${escapeHtml(String(training.options.optimizer))}, lr ${escapeHtml(String(training.options.lr))}` : '';
  parts.push(`<p class="run-line">on ${escapeHtml(training.device ?? '?')} (${escapeHtml(training.backend ?? '?')})` +
    `${elapsed} · steps ${training.first_step ?? 0} to ${training.steps ?? '?'}${optimizer}</p>`);
  parts.push(`<p class="final-loss">loss <code>${escapeHtml(training.loss ?? '?')}</code>: ` +
    `${escapeHtml(lossValue(training.initial_loss))} → <span class="value">${escapeHtml(lossValue(training.final_loss))}</span>` +
    `${training.validation && training.validation.length
      ? ` · validation <span class="value">${escapeHtml(lossValue(training.validation[training.validation.length - 1].loss))}</span>` : ''}</p>`);
  const history = training.history ?? [];
  parts.push(history.length ? lossChart(history) : '<p class="note">no steps were taken</p>');
  const params = Object.entries(training.params ?? {});
  if (params.length) {
    parts.push('<h3>Params</h3>', ...params.map(([name, s]) =>
      `<section class="param" data-name="${escapeHtml(name)}"><h3>${escapeHtml(name)}</h3>${factsLine(s)}${statsTable(s)}</section>`));
  }
  if (training.checkpoint) {
    parts.push(`<p class="checkpoint">checkpoint <code>${escapeHtml(training.checkpoint)}</code></p>`);
  }
  return `<h2>Training</h2><section class="training">${parts.join('\n')}</section>`;
}

function graphHtml(graph: NonNullable<PanelState['graph']>): string {
  const body = graph.uri
    ? `<img class="graph" src="${escapeHtml(graph.uri)}" alt="${escapeHtml(`dataflow graph of ${graph.program}`)}">`
    : `<p class="${graph.error ? 'error' : 'note pending'}">${escapeHtml(graph.error ?? 'drawing the graph…')}</p>`;
  return `<h2 id="program-graph-title">Program graph <span class="dim">${escapeHtml(graph.program)}</span></h2>` +
    `<section class="program-graph" id="program-graph">${body}</section>`;
}

/** The page's `<main>`: all it shows (an update replaces it). */
export function mainHtml(state: PanelState): string {
  const run = state.run;
  const title = state.program ? `Fuse Results · ${state.program}` : 'Fuse Results';
  const body: string[] = [`<h1>${escapeHtml(title)}</h1>`];
  if (state.running) {
    body.push(`<p class="note pending running">${escapeHtml(state.running)}</p>`);
  }
  if (state.training) {
    body.push(trainingHtml(state.training));
  }
  if (run) {
    body.push(runHtml(state, run));
  } else if (!state.graph && !state.running && !state.training) {
    body.push('<p class="note">Run a program (Fuse: Run) to see its results here.</p>');
  }
  if (state.graph) {
    body.push(graphHtml(state.graph));
  }
  const attributes = [`data-running="${state.running ? 'yes' : 'no'}"`, `data-run-count="${state.runCount}"`,
    `data-pictures="${state.picturesState}"`,
    `data-graph="${state.graph ? (state.graph.uri ? 'ready' : state.graph.error ? 'failed' : 'pending') : 'none'}"`];
  if (state.answeredAt !== undefined) {
    attributes.push(`data-answered-ms="${state.answeredAt}"`);
  }
  return `<main id="fuse-results" ${attributes.join(' ')}>\n${body.join('\n')}\n</main>`;
}

/** The whole page. */
export function panelHtml(state: PanelState, page: PageContext): string {
  const title = state.program ? `Fuse Results · ${state.program}` : 'Fuse Results';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(page.cspSource, page.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(page.styleUri)}">
<title>${escapeHtml(title)}</title>
</head>
<body>
${mainHtml(state)}
<script nonce="${escapeHtml(page.nonce)}" src="${escapeHtml(page.scriptUri)}"></script>
</body>
</html>
`;
}
