/**
 * A run's trace (`fuse_lang/run/trace.py`: per equation its time, per fixpoint
 * its rounds) as small inline SVG charts for the Fuse Results panel. Pure: no
 * `vscode` import. Colours come from the panel's stylesheet through class
 * names (the panel's CSP allows no inline styles), so they follow the theme.
 */
import { escapeHtml } from './html';

export interface TraceEquation {
  tensor: string;
  seconds: number;
  shape: number[];
  nonzeros?: number;
  recursive?: boolean;
}

export interface TraceRound {
  iteration: number;
  seconds: number;
  facts_added?: number;  // semi-naive rounds
  change?: number;  // naive rounds: the largest change
}

export interface TraceFixpoint {
  group: string[];
  strategy: string;
  rounds: TraceRound[];
}

export interface RunTrace {
  equations: TraceEquation[];
  fixpoints: TraceFixpoint[];
}

export const MAX_BARS = 40;  // equations drawn; the rest are counted below the chart
export const MAX_ROUNDS = 120;  // fixpoint rounds drawn
const ROW = 18;
const LABEL_W = 130;
const BAR_W = 240;
const VALUE_W = 80;

/** Seconds as a short text in milliseconds ("0.042 ms", "12.5 ms", "1,204 ms"). */
export function milliseconds(seconds: number): string {
  const ms = seconds * 1000;
  if (ms >= 100) {
    return `${Math.round(ms).toLocaleString('en-US')} ms`;
  }
  return `${Number(ms.toPrecision(3))} ms`;
}

function clip(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}…`;
}

/** Per-equation time as horizontal bars, in evaluation order (recursive ones marked). */
export function equationChart(equations: TraceEquation[]): string {
  const shown = equations.slice(0, MAX_BARS);
  if (!shown.length) {
    return '';
  }
  const longest = Math.max(...shown.map((e) => e.seconds), 1e-12);
  const width = LABEL_W + BAR_W + VALUE_W;
  const height = shown.length * ROW + 4;
  const rows = shown.map((e, i) => {
    const y = i * ROW + 2;
    const w = Math.max(1, Math.round((e.seconds / longest) * BAR_W));
    const size = e.nonzeros === undefined ? '' : `, ${e.nonzeros} non-zeros`;
    const tip = `${e.tensor}: ${milliseconds(e.seconds)}, shape (${e.shape.join(', ')})${size}` +
      (e.recursive ? ', recursive' : '');
    return `<g><title>${escapeHtml(tip)}</title>` +
      `<text class="trace-label" x="${LABEL_W - 6}" y="${y + 13}" text-anchor="end">${escapeHtml(clip(e.tensor, 18))}</text>` +
      `<rect class="trace-bar${e.recursive ? ' recursive' : ''}" x="${LABEL_W}" y="${y + 2}" width="${w}" height="${ROW - 5}"></rect>` +
      `<text class="trace-value" x="${LABEL_W + w + 4}" y="${y + 13}">${escapeHtml(milliseconds(e.seconds))}</text></g>`;
  });
  const more = equations.length > shown.length
    ? `<p class="note">and ${equations.length - shown.length} more equations (not drawn)</p>` : '';
  return `<svg class="trace-chart" role="img" aria-label="time per equation" width="${width}" ` +
    `height="${height}" viewBox="0 0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg">` +
    `${rows.join('')}</svg>${more}`;
}

/** One fixpoint's rounds as columns: facts added per round (semi-naive) or the largest change (naive). */
export function fixpointChart(fixpoint: TraceFixpoint): string {
  const rounds = fixpoint.rounds.slice(0, MAX_ROUNDS);
  const added = fixpoint.strategy === 'semi_naive';
  const value = (r: TraceRound) => Math.abs((added ? r.facts_added : r.change) ?? 0);
  const total = fixpoint.rounds.reduce((sum, r) => sum + r.seconds, 0);
  const title = `fixpoint of ${fixpoint.group.join(', ')} (${fixpoint.strategy.replace('_', '-')}): ` +
    `${fixpoint.rounds.length} iteration${fixpoint.rounds.length === 1 ? '' : 's'}, ${milliseconds(total)}`;
  const heading = `<p class="trace-title">${escapeHtml(title)}</p>`;
  if (!rounds.length) {
    return heading;
  }
  const height = 70;
  const step = Math.max(3, Math.min(18, Math.floor(360 / rounds.length)));
  const width = rounds.length * step + 40;
  const top = Math.max(...rounds.map(value), 1e-12);
  const columns = rounds.map((r, i) => {
    const h = Math.max(1, Math.round((value(r) / top) * (height - 16)));
    const what = added ? `${r.facts_added ?? 0} facts added` : `largest change ${r.change ?? 0}`;
    return `<rect class="trace-round" x="${i * step + 1}" y="${height - 12 - h}" width="${step - 1}" ` +
      `height="${h}"><title>${escapeHtml(`iteration ${r.iteration}: ${what}, ${milliseconds(r.seconds)}`)}</title></rect>`;
  });
  const axis = `<text class="trace-value" x="0" y="${height - 1}">1</text>` +
    `<text class="trace-value" x="${(rounds.length - 1) * step}" y="${height - 1}">${rounds.length}</text>` +
    `<text class="trace-value" x="${rounds.length * step + 4}" y="12">${added ? 'facts added' : 'change'}</text>`;
  const more = fixpoint.rounds.length > rounds.length
    ? `<p class="note">first ${rounds.length} of ${fixpoint.rounds.length} iterations drawn</p>` : '';
  return `${heading}<svg class="trace-chart" role="img" aria-label="${escapeHtml(title)}" width="${width + 80}" ` +
    `height="${height}" viewBox="0 0 ${width + 80} ${height}" xmlns="http://www.w3.org/2000/svg">` +
    `${columns.join('')}${axis}</svg>${more}`;
}

/** The trace section's body: the equations' times, then each fixpoint. */
export function traceHtml(trace: RunTrace | null | undefined): string {
  if (!trace) {
    return '';
  }
  const equations = trace.equations ?? [];
  const total = equations.reduce((sum, e) => sum + e.seconds, 0);
  const parts = [`<p class="trace-title">time per equation (${equations.length}, ${milliseconds(total)} in all)</p>`,
    equationChart(equations)];
  for (const fixpoint of trace.fixpoints ?? []) {
    parts.push(fixpointChart(fixpoint));
  }
  return parts.join('\n');
}
