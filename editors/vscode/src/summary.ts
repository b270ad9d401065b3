/**
 * Pure helpers (no `vscode` import, so the tests can load them in plain Node):
 * the server's `fuse.run` answer as text, and the run targets offered by its
 * "Run on <device> (<backend>)" code actions.
 */
import type { LossPoint, RunTrace } from './traceChart';

/** One array's statistics, as `fuse_lang.run_summary.ArraySummary.to_json()` writes them. */
export interface ArraySummary {
  shape: number[];
  dtype: string;
  size: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
  nonfinite: number;
  nonzeros?: number;  // servers before the results panel do not send it
  preview: (number | string)[];
  truncated: boolean;
  // a Boolean relation among the outputs: its tuple count, its first tuples as values
  // (sorted by value) and, from newer servers, each as a program writes it
  relation?: boolean;
  count?: number;
  tuples?: unknown[][];
  tuple_texts?: string[];
}

export interface QuerySummary extends ArraySummary {
  text: string;
  tensor: string;
  free: string[];
  boolean: boolean;
  answer: string;
}

/** The answer of `fuse.run`: a summary when `ok`, else an error (or a cancel). */
export interface RunResult {
  ok: boolean;
  error?: string;
  cancelled?: boolean;
  program?: string;
  backend?: string;
  device?: string;
  elapsed_ms?: number;
  target?: string | null;
  outputs?: Record<string, ArraySummary>;
  queries?: QuerySummary[];
  sinks?: string[];
  not_run?: { what: string; line: number; reason: string }[];
  message?: string;
  trace?: RunTrace | null;  // per equation and fixpoint round, when the server ran with a trace
}

/** The answer of `fuse.train` (`fuse_lang/ide/train_summary.py`): a summary when `ok`. */
export interface TrainResult {
  ok: boolean;
  error?: string;
  cancelled?: boolean;
  program?: string;
  backend?: string;
  device?: string;
  loss?: string;  // the loss tensor's name
  elapsed_ms?: number;
  first_step?: number;
  steps?: number;
  initial_loss?: number | string | null;
  final_loss?: number | string | null;
  history?: LossPoint[];
  validation?: { step: number; loss: number | string }[];
  params?: Record<string, ArraySummary>;
  checkpoint?: string | null;
  options?: Record<string, unknown>;
  message?: string;
}

/** A one-line message for a training's answer. */
export function trainMessage(result: TrainResult | null | undefined): string {
  if (!result) {
    return 'Fuse: the server gave no answer';
  }
  if (!result.ok) {
    return result.cancelled ? 'Fuse: the training was cancelled' : `Fuse: ${result.error ?? 'the training failed'}`;
  }
  return result.message ?? `Trained ${result.program ?? 'the program'}`;
}

function lossText(value: number | string | null | undefined): string {
  return typeof value === 'number' ? num(value) : String(value ?? '-');
}

/** The summary of a training, as lines for an output channel. */
export function formatTrainResult(result: TrainResult | null | undefined): string[] {
  const lines = [trainMessage(result)];
  if (!result || !result.ok) {
    return lines;
  }
  const options = Object.entries(result.options ?? {}).filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
  lines.push(`program ${result.program ?? '?'} on ${result.device ?? '?'} (${result.backend ?? '?'}), ` +
    `steps ${result.first_step ?? 0} to ${result.steps ?? '?'}${options.length ? `, ${options.join(', ')}` : ''}`);
  lines.push(`loss ${result.loss ?? '?'}: ${lossText(result.initial_loss)} -> ${lossText(result.final_loss)}`);
  for (const v of result.validation ?? []) {
    lines.push(`  validation at step ${v.step}: ${lossText(v.loss)}`);
  }
  for (const [name, s] of Object.entries(result.params ?? {})) {
    lines.push('', `param ${name}`, ...arrayLines(s, '  '));
  }
  if (result.checkpoint) {
    lines.push('', `checkpoint: ${result.checkpoint}`);
  }
  return lines;
}

/** A backend/device pair to run on. */
export interface RunTarget {
  backend: string;
  device: string;
}

export const DEFAULT_TARGETS: RunTarget[] = [{ backend: 'numpy', device: 'cpu' }];

export function shapeText(shape: number[] | undefined): string {
  if (!shape || shape.length === 0) {
    return '()';
  }
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
}

export function num(value: number | null | undefined): string {
  if (value === null || value === undefined) {
    return '-';
  }
  if (Number.isInteger(value)) {
    return String(value);
  }
  return Number(value.toPrecision(6)).toString();
}

function previewText(s: ArraySummary): string {
  const values = (s.preview ?? []).map((v) => (typeof v === 'number' ? num(v) : String(v)));
  return `[${values.join(', ')}${s.truncated ? ', ...' : ''}]`;
}

function arrayLines(s: ArraySummary, indent: string): string[] {
  const lines = [
    `${indent}shape ${shapeText(s.shape)}, ${s.dtype}, ${s.size} value${s.size === 1 ? '' : 's'}`,
    `${indent}min ${num(s.min)}  max ${num(s.max)}  mean ${num(s.mean)}  std ${num(s.std)}` +
      (s.nonfinite ? `  (${s.nonfinite} non-finite)` : ''),
    `${indent}preview ${previewText(s)}`,
  ];
  return lines;
}

/** A value as a Fuse program writes it (fuse_lang/io/relation_tuples.py `value_text`):
 * a capitalised name as is (`Alice`), any other string quoted (`"ann"`), a number as a number. */
export function valueText(value: unknown): string {
  if (typeof value === 'string') {
    return /^[A-Z][A-Za-z0-9_]*$/.test(value) ? value : `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  }
  return String(value);
}

/** A tuple as `(Alice, "ann", 7)`. */
export function tupleText(tuple: unknown[]): string {
  return `(${tuple.map(valueText).join(', ')})`;
}

/** Whether an output is a Boolean relation the server sent as tuples. */
export function isRelation(s: ArraySummary): boolean {
  return s.relation === true && Array.isArray(s.tuples);
}

/** A relation's size in words: "yes"/"no" for a 0-ary one, else "N tuples". */
export function relationWhat(s: ArraySummary): string {
  const count = s.count ?? (s.tuples ?? []).length;
  if (!s.shape || s.shape.length === 0) {
    return count ? 'yes' : 'no';
  }
  return `${count} tuple${count === 1 ? '' : 's'}`;
}

/** A relation's tuples the server sent, each as a program writes it (the server's text when it sends one). */
export function relationTuples(s: ArraySummary): string[] {
  if (!s.shape || s.shape.length === 0) {
    return [];
  }
  const tuples = s.tuples ?? [];
  return tuples.map((t, i) => s.tuple_texts?.[i] ?? tupleText(t));
}

/** How many tuples a relation has beyond those sent (0 when all were). */
export function relationMore(s: ArraySummary): number {
  const shown = relationTuples(s).length;
  return Math.max(0, (s.count ?? shown) - shown);
}

function relationLines(s: ArraySummary, indent: string): string[] {
  const lines = relationTuples(s).map((t) => `${indent}${t}`);
  const more = relationMore(s);
  if (more) {
    lines.push(`${indent}... and ${more} more`);
  }
  return lines;
}

/** A one-line message for a run's answer. */
export function runMessage(result: RunResult | null | undefined): string {
  if (!result) {
    return 'Fuse: the server gave no answer';
  }
  if (!result.ok) {
    return result.cancelled ? 'Fuse: the run was cancelled' : `Fuse: ${result.error ?? 'the run failed'}`;
  }
  return result.message ?? `Ran ${result.program ?? 'the program'}`;
}

/** The full summary of a run, as lines for an output channel. */
export function formatRunResult(result: RunResult | null | undefined): string[] {
  if (!result || !result.ok) {
    return [runMessage(result)];
  }
  const lines = [runMessage(result)];
  const where = `${result.device ?? '?'} (${result.backend ?? '?'})`;
  const elapsed = result.elapsed_ms === undefined ? '' : `, ${num(result.elapsed_ms)} ms`;
  lines.push(`program ${result.program ?? '?'} on ${where}${elapsed}` +
    (result.target ? `, target ${result.target}` : ''));
  for (const [name, s] of Object.entries(result.outputs ?? {})) {
    if (isRelation(s)) {
      lines.push('', `${name}  ${relationWhat(s)}`, ...relationLines(s, '  '));
    } else {
      lines.push('', `${name}`, ...arrayLines(s, '  '));
    }
  }
  for (const q of result.queries ?? []) {
    lines.push('', `${q.text}  ${q.answer}`);
    if (q.tuples) {
      const shown = q.tuples.slice(0, 20);
      for (const t of shown) {
        lines.push(`  (${t.map(String).join(', ')})`);
      }
      if (q.tuples.length > shown.length) {
        lines.push(`  ... ${q.tuples.length - shown.length} more`);
      }
    } else {
      lines.push(...arrayLines(q, '  '));
    }
  }
  if (result.sinks && result.sinks.length) {
    lines.push('', 'wrote:');
    lines.push(...result.sinks.map((s) => `  ${s}`));
  }
  // what a target's cone, or the whole document run past its errors, left out for an error
  const broken = (result.not_run ?? []).filter((n) => !n.reason.startsWith('not needed'));
  if (broken.length) {
    lines.push('', 'not run (errors):');
    lines.push(...broken.map((n) => `  ${n.what} (line ${n.line}): ${n.reason}`));
  }
  return lines;
}

/** Minimal shape of an LSP Command / CodeAction, as the server sends them. */
interface CommandLike {
  command?: string | CommandLike;
  arguments?: unknown[];
}

/**
 * The run targets among code actions (the server's "Run on <device> (<backend>)"
 * actions carry `fuse.run` with `[uri, {backend, device}]`), without repeats,
 * the preferred one (the configured default) first. Falls back to numpy/cpu.
 */
export function runTargets(actions: unknown[] | null | undefined, preferred?: RunTarget,
                           command = 'fuse.run'): RunTarget[] {
  const found = commandTargets(actions, command);
  const targets = found.length || command !== 'fuse.run' ? found : [...DEFAULT_TARGETS];
  if (preferred) {
    const i = targets.findIndex((t) => t.backend === preferred.backend && t.device === preferred.device);
    if (i > 0) {
      targets.unshift(...targets.splice(i, 1));
    }
  }
  return targets;
}

/**
 * The training targets among code actions (the server's "Train on <device>
 * (<backend>)" actions, torch and jax only), the preferred one first; empty when
 * no framework that computes gradients is installed.
 */
export function trainTargets(actions: unknown[] | null | undefined, preferred?: RunTarget): RunTarget[] {
  return runTargets(actions, preferred, 'fuse.train');
}

function commandTargets(actions: unknown[] | null | undefined, name: string): RunTarget[] {
  const found: RunTarget[] = [];
  for (const action of actions ?? []) {
    const item = action as CommandLike;
    const command = typeof item.command === 'object' ? item.command : item;
    if (!command || command.command !== name) {
      continue;
    }
    const opts = (command.arguments ?? [])[1] as Partial<RunTarget> | undefined;
    if (!opts || typeof opts.backend !== 'string' || typeof opts.device !== 'string') {
      continue;
    }
    if (!found.some((t) => t.backend === opts.backend && t.device === opts.device)) {
      found.push({ backend: opts.backend, device: opts.device });
    }
  }
  return found;
}

/**
 * The command line that starts the server: `<python> -m fuse_lsp` or the server path.
 * The settings are read as the user wrote them (VS Code hands back a value of the
 * wrong type as it is): a value that is not a string is left out, as if unset, and
 * named in `ignored` (`fuse.server.path = 42` once failed the whole activation).
 */
export function serverCommand(path: unknown, python: unknown, home?: string
): { command: string; args: string[]; ignored?: string[] } {
  const expand = (p: string) => (home && (p === '~' || p.startsWith('~/')) ? home + p.slice(1) : p);
  const ignored: string[] = [];
  const text = (value: unknown, name: string): string => {
    if (typeof value === 'string') {
      return value.trim();
    }
    if (value !== undefined && value !== null) {
      ignored.push(`${name} = ${JSON.stringify(value)} (not a string)`);
    }
    return '';
  };
  const py = text(python, 'fuse.server.python');
  const line = py ? { command: expand(py), args: ['-m', 'fuse_lsp'] }
    : { command: expand(text(path, 'fuse.server.path') || 'fuse-lsp'), args: [] as string[] };
  return ignored.length ? { ...line, ignored } : line;
}
