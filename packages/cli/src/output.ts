/** Terminal output helpers: colour only on a TTY and never when NO_COLOR is set (https://no-color.org). */
export function useColor(stream: NodeJS.WriteStream = process.stdout): boolean {
  if (process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '') return false;
  if (process.env.FORCE_COLOR && process.env.FORCE_COLOR !== '0') return true;
  return Boolean(stream.isTTY);
}

const codes = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;
export function paint(color: keyof typeof codes, text: string, enabled = useColor()): string {
  return enabled ? `\u001b[${codes[color]}m${text}\u001b[0m` : text;
}

/** A plain-text table with padded columns. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  // eslint-disable-next-line no-control-regex
  const visible = (s: string) => s.replace(/\u001b\[\d+m/g, '').length;
  const widths = headers.map((h, i) => Math.max(visible(h), ...rows.map((r) => visible(r[i] ?? ''))));
  const line = (cells: readonly string[]) => cells.map((c, i) => c + ' '.repeat(widths[i]! - visible(c))).join('  ').trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
