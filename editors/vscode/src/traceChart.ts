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

/** One point of a training's loss curve (`fuse_lang/ide/train_summary.py` TrainPoint). */
export interface LossPoint {
  step: number;
  loss: number | string;  // "nan" / "inf" as strings (JSON has no such numbers)
  seconds?: number;
  validation?: number | string;
}

const LOSS_W = 360;
const LOSS_H = 140;
const LOSS_LEFT = 56;  // room for the loss labels
const LOSS_BOTTOM = 18;  // room for the step labels

/** A short number for an axis label: 3 significant digits. */
function axisNumber(value: number): string {
  return Math.abs(value) >= 1e4 || (value !== 0 && Math.abs(value) < 1e-3)
    ? value.toExponential(2) : String(Number(value.toPrecision(3)));
}

/**
 * A training's loss per step as a line, its validation losses as dots, in the
 * trace charts' style (classes, not inline styles). The loss axis is logarithmic
 * when every loss is positive and they span more than a factor of 100 (a loss
 * falling by orders of magnitude stays readable), else linear.
 */
export function lossChart(points: LossPoint[]): string {
  const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  const train = points.filter((p) => finite(p.loss)) as (LossPoint & { loss: number })[];
  const held = points.filter((p) => finite(p.validation)) as (LossPoint & { validation: number })[];
  if (!train.length) {
    return '<p class="note">no finite loss to draw</p>';
  }
  const values = [...train.map((p) => p.loss), ...held.map((p) => p.validation)];
  const low = Math.min(...values);
  const high = Math.max(...values);
  const log = low > 0 && high / low > 100;
  const scale = (v: number) => (log ? Math.log10(v) : v);
  const bottom = scale(low);
  const span = Math.max(scale(high) - bottom, 1e-12);
  const first = train[0].step;
  const last = Math.max(train[train.length - 1].step, first + 1);
  const plotH = LOSS_H - LOSS_BOTTOM - 6;
  const x = (step: number) => (LOSS_LEFT + ((step - first) / (last - first)) * LOSS_W).toFixed(1);
  const y = (v: number) => (6 + plotH - ((scale(v) - bottom) / span) * plotH).toFixed(1);
  const line = train.map((p) => `${x(p.step)},${y(p.loss)}`).join(' ');
  const dots = held.map((p) => `<circle class="loss-validation" cx="${x(p.step)}" cy="${y(p.validation)}" r="3">` +
    `<title>${escapeHtml(`step ${p.step}: validation loss ${axisNumber(p.validation)}`)}</title></circle>`).join('');
  const end = train[train.length - 1];
  const title = `loss per step (${train.length} points${log ? ', log scale' : ''})`;
  const axes = `<line class="loss-axis" x1="${LOSS_LEFT}" y1="${6 + plotH}" x2="${LOSS_LEFT + LOSS_W}" y2="${6 + plotH}"></line>` +
    `<line class="loss-axis" x1="${LOSS_LEFT}" y1="6" x2="${LOSS_LEFT}" y2="${6 + plotH}"></line>` +
    `<text class="trace-value" x="${LOSS_LEFT - 4}" y="12" text-anchor="end">${escapeHtml(axisNumber(high))}</text>` +
    `<text class="trace-value" x="${LOSS_LEFT - 4}" y="${6 + plotH}" text-anchor="end">${escapeHtml(axisNumber(low))}</text>` +
    `<text class="trace-value" x="${LOSS_LEFT}" y="${LOSS_H - 2}">${first}</text>` +
    `<text class="trace-value" x="${LOSS_LEFT + LOSS_W}" y="${LOSS_H - 2}" text-anchor="end">step ${end.step}</text>`;
  const width = LOSS_LEFT + LOSS_W + 10;
  return `<p class="trace-title">${escapeHtml(title)}</p>` +
    `<svg class="trace-chart loss-chart" role="img" aria-label="${escapeHtml(title)}" width="${width}" ` +
    `height="${LOSS_H}" viewBox="0 0 ${width} ${LOSS_H}" xmlns="http://www.w3.org/2000/svg">${axes}` +
    `<polyline class="loss-line" points="${line}"><title>${escapeHtml(`final loss ${axisNumber(end.loss)} at step ${end.step}`)}</title></polyline>` +
    `${dots}</svg>`;
}
