import { stripVTControlCharacters } from 'node:util';

/** Terminal output helpers: colour only on a TTY and never when NO_COLOR is set (https://no-color.org). */
export function useColor(tty: boolean | undefined): boolean {
  const { NO_COLOR, FORCE_COLOR } = process.env;
  if (NO_COLOR) return false;
  return (Boolean(FORCE_COLOR) && FORCE_COLOR !== '0') || Boolean(tty);
}

const codes = { red: 31, green: 32, yellow: 33, cyan: 36, dim: 2, bold: 1 } as const;
export function paint(color: keyof typeof codes, text: string, enabled: boolean): string {
  return enabled ? `\u001b[${codes[color]}m${text}\u001b[0m` : text;
}

const visibleLength = (s: string): number => stripVTControlCharacters(s).length;

/** A plain-text table with padded columns and a rule under the header; `right` columns are right-aligned, a blank line goes before each row in `breaks`. */
export function table(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  options: { readonly right?: readonly number[]; readonly breaks?: readonly number[] } = {},
): string {
  const widths = headers.map((h, i) => Math.max(visibleLength(h), ...rows.map((r) => visibleLength(r[i] ?? ''))));
  const right = new Set(options.right ?? []);
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => {
        const pad = ' '.repeat(widths[i]! - visibleLength(c));
        return right.has(i) ? pad + c : c + pad;
      })
      .join('  ')
      .trimEnd();
  const breaks = new Set(options.breaks ?? []);
  const body = rows.flatMap((r, i) => (i > 0 && breaks.has(i) ? ['', line(r)] : [line(r)]));
  return [line(headers), line(widths.map((w) => '─'.repeat(w))), ...body].join('\n');
}

/** Progress: on a TTY one status line redrawn in place, notes and important lines above it; elsewhere one line per finished unit. */
export function createProgress(total: number, write: (text: string) => void, tty: boolean, color: boolean) {
  let finished = 0;
  let current = '';
  const width = String(total).length;
  const counter = () => `[${String(finished).padStart(width)}/${total}]`;
  const clear = () => tty && write('\r\u001b[2K');
  const draw = () => {
    if (!tty) return;
    const cols = process.stderr.columns ?? 100;
    const share = total === 0 ? 1 : finished / total;
    const cells = cols >= 120 ? 20 : 10;
    const bar = '█'.repeat(Math.round(share * cells)).padEnd(cells, '░');
    let text = `${counter()} ${bar} ${String(Math.floor(share * 100)).padStart(3)}% ${current}`;
    if (text.length > cols - 1) text = `${text.slice(0, cols - 2)}…`;
    write(`\r\u001b[2K${paint('cyan', text, color)}`);
  };
  const note = (line: string) => {
    clear();
    write(`${line}\n`);
    draw();
  };
  return {
    start(label: string) {
      current = label;
      draw();
    },
    done(line: string, important = false) {
      finished += 1;
      if (!tty) write(`${counter()} ${line}\n`);
      else if (important) note(line);
      else draw();
    },
    note,
    end: clear,
  };
}

/** Text for XML and HTML: markup characters escaped, control characters XML 1.0 does not allow removed. */
export const escapeXml = (s: unknown) =>
  String(s)
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!)
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');

/** The named fields of `o`, in that order: what a JSON report keeps of a bigger object. */
export const pick = <T, K extends keyof T>(o: T, ...keys: K[]) =>
  Object.fromEntries(keys.map((k) => [k, o[k]])) as Pick<T, K>;

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Milliseconds as a short human duration: `850 ms`, `12.4 s`, `3 min 05 s`. */
export function humanMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${m} min ${String(s).padStart(2, '0')} s`;
}
